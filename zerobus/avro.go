//go:build avro

package zerobus

// The official SDK's Avro API, which it ships in Beta behind the avro
// build tag: build with -tags avro to use it, as with the official SDK.
// The raw-datum calls need nothing more; the AvroRecord calls encode with
// github.com/hamba/avro/v2, as the official SDK's do, which is why this
// file alone imports it.

import (
	"context"
	"fmt"

	"github.com/hamba/avro/v2"

	"github.com/zbstream/zbstream"
)

const msgNotAvro = "Invalid argument: stream is not an Avro stream."

// AvroTableProperties names the table of an Avro stream and the writer
// schema of its records.
type AvroTableProperties struct {
	// TableName is the table, catalog.schema.table.
	TableName string
	// SchemaJSON is the records' writer schema, an Avro record schema as
	// JSON (required).
	SchemaJSON string
}

// AvroRecord is one record as field names and values, encoded with the
// stream's writer schema by the IngestAvroRecord calls.
type AvroRecord map[string]any

// Union is a value of one branch of an Avro union, named by its type (or
// full name, for a named type), as the encoder takes it.
func Union(branch string, v any) map[string]any { return map[string]any{branch: v} }

// CreateAvroStream creates an Avro stream (RecordTypeAvro, whatever
// options.RecordType says) into tableProps.TableName, authenticated with
// OAuth client credentials as CreateStream is. The schema is parsed first:
// one that is not valid Avro is a non-retryable *ZerobusError, and the
// server refuses one that is not a record schema.
func (s *ZerobusSdk) CreateAvroStream(tableProps AvroTableProperties, clientID string, clientSecret string, options *StreamConfigurationOptions) (*ZerobusStream, error) {
	creds := zbstream.WithOAuth(s.ucURL, clientID, clientSecret)
	return s.createAvro(tableProps, options, creds, func() (*zbstream.Client, error) { return s.oauthClient(clientID, clientSecret) })
}

// CreateAvroStreamWithHeadersProvider creates an Avro stream as
// CreateAvroStream does, with the headers of headersProvider.
func (s *ZerobusSdk) CreateAvroStreamWithHeadersProvider(tableProps AvroTableProperties, headersProvider HeadersProvider, options *StreamConfigurationOptions) (*ZerobusStream, error) {
	if headersProvider == nil {
		return nil, fatal(msgNoProvider)
	}
	creds := zbstream.WithHeadersProvider(providerAdapter{headersProvider})
	return s.createAvro(tableProps, options, creds, func() (*zbstream.Client, error) { return s.providerClient(headersProvider) })
}

func (s *ZerobusSdk) createAvro(tp AvroTableProperties, options *StreamConfigurationOptions, creds zbstream.Option, shared func() (*zbstream.Client, error)) (*ZerobusStream, error) {
	schema, err := avro.Parse(tp.SchemaJSON)
	if err != nil {
		return nil, fatal("parse avro schema: " + err.Error())
	}
	st, err := s.create(TableProperties{TableName: tp.TableName}, tp.SchemaJSON, options, creds, shared)
	if err != nil {
		return nil, err
	}
	st.avro = schema
	return st, nil
}

// IngestAvroBytesOffset ingests one raw Avro binary datum of the stream's
// writer schema and returns its offset once it is queued, as
// IngestRecordOffset does. The server refuses a datum that does not
// decode under the schema, and the stream then fails.
func (st *ZerobusStream) IngestAvroBytesOffset(data []byte) (int64, error) {
	if err := st.avroUsable(); err != nil {
		return -1, err
	}
	off, err := st.st.IngestRecord(context.Background(), data)
	if err != nil {
		return -1, wrap(err)
	}
	return off, nil
}

// IngestAvroBytesBatchOffset ingests datums as one call under one offset,
// as IngestRecordsOffset does. An empty batch returns -1 and no error.
func (st *ZerobusStream) IngestAvroBytesBatchOffset(records [][]byte) (int64, error) {
	if err := st.avroUsable(); err != nil {
		return -1, err
	}
	if len(records) == 0 {
		return -1, nil
	}
	off, err := st.st.IngestBatch(context.Background(), records)
	if err != nil {
		return -1, wrap(err)
	}
	return off, nil
}

// IngestAvroBytesNowait ingests one datum without waiting, as
// IngestRecordNowait does.
func (st *ZerobusStream) IngestAvroBytesNowait(data []byte) error {
	if err := st.avroUsable(); err != nil {
		return err
	}
	return st.submit(pending{records: [][]byte{data}}, true)
}

// IngestAvroBytesBatchNowait ingests datums as one call without waiting,
// as IngestRecordsNowait does. An empty batch does nothing.
func (st *ZerobusStream) IngestAvroBytesBatchNowait(records [][]byte) error {
	if err := st.avroUsable(); err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	return st.submit(pending{records: records, batch: true}, true)
}

// IngestAvroRecordOffset encodes record with the stream's writer schema
// and ingests it as IngestAvroBytesOffset does. A record the schema does
// not take is a non-retryable *ZerobusError and nothing is ingested.
func (st *ZerobusStream) IngestAvroRecordOffset(record AvroRecord) (int64, error) {
	data, err := st.encodeAvro(record)
	if err != nil {
		return -1, err
	}
	return st.IngestAvroBytesOffset(data)
}

// IngestAvroRecordsOffset encodes records and ingests them as one call, as
// IngestAvroBytesBatchOffset does; one that does not encode fails the
// whole batch, naming its index.
func (st *ZerobusStream) IngestAvroRecordsOffset(records []AvroRecord) (int64, error) {
	data, err := st.encodeAvroBatch(records)
	if err != nil {
		return -1, err
	}
	return st.IngestAvroBytesBatchOffset(data)
}

// IngestAvroRecordNowait encodes record and ingests it without waiting.
func (st *ZerobusStream) IngestAvroRecordNowait(record AvroRecord) error {
	data, err := st.encodeAvro(record)
	if err != nil {
		return err
	}
	return st.IngestAvroBytesNowait(data)
}

// IngestAvroRecordsNowait encodes records and ingests them as one call
// without waiting.
func (st *ZerobusStream) IngestAvroRecordsNowait(records []AvroRecord) error {
	data, err := st.encodeAvroBatch(records)
	if err != nil {
		return err
	}
	return st.IngestAvroBytesBatchNowait(data)
}

// avroUsable refuses a closed stream and one that is not Avro.
func (st *ZerobusStream) avroUsable() error {
	switch {
	case st.closed.Load():
		return fatal(msgClosed)
	case st.avro == nil:
		return fatal(msgNotAvro)
	}
	return nil
}

func (st *ZerobusStream) encodeAvro(record AvroRecord) ([]byte, error) {
	if err := st.avroUsable(); err != nil {
		return nil, err
	}
	b, err := avro.Marshal(st.avro.(avro.Schema), map[string]any(record))
	if err != nil {
		return nil, fatal("encode avro record: " + err.Error())
	}
	return b, nil
}

func (st *ZerobusStream) encodeAvroBatch(records []AvroRecord) ([][]byte, error) {
	out := make([][]byte, len(records))
	for i, r := range records {
		b, err := st.encodeAvro(r)
		if err != nil {
			return nil, fatal(fmt.Sprintf("encode record %d: %v", i, err))
		}
		out[i] = b
	}
	return out, nil
}
