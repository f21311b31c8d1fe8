package core

// Kind is the kind of stream a Machine drives.
type Kind uint8

const (
	// Ephemeral streams are at-least-once: every connection is a new server
	// stream, wire offsets restart at 0, and everything unacknowledged is sent
	// again after a reconnect.
	Ephemeral Kind = iota + 1
	// Persistent streams are exactly-once: created once, resumed by id on every
	// reconnect, with wire offset equal to logical offset for the stream's
	// whole life.
	Persistent
)

func (k Kind) String() string {
	switch k {
	case Ephemeral:
		return "ephemeral"
	case Persistent:
		return "persistent"
	}
	return "unknown-kind"
}

// RecordType is the encoding of a stream's records. One stream carries one
// type; records of two types never mix.
type RecordType uint8

const (
	// RecordUnspecified is the zero value and is never valid in a stream.
	RecordUnspecified RecordType = iota
	// RecordProto records are serialized protobuf messages.
	RecordProto
	// RecordJSON records are JSON objects, one per record.
	RecordJSON
	// RecordAvro records are raw Avro binary datums of the stream's writer
	// schema (which the transport sends at create); to the core they are
	// bytes like any other.
	RecordAvro
)

func (t RecordType) String() string {
	switch t {
	case RecordProto:
		return "proto"
	case RecordJSON:
		return "json"
	case RecordAvro:
		return "avro"
	}
	return "unspecified"
}

// NoOffset is the offset meaning "nothing": no record assigned, nothing
// acknowledged, nothing committed.
const NoOffset int64 = -1

// ConnID names one connection attempt. The machine issues a new one for every
// open; events that carry an older ConnID are late news from a connection the
// machine has already left, and are ignored.
type ConnID uint64
