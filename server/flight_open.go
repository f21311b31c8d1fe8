package server

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/internal/faults"
)

// open checks an Arrow stream's schema frame (and the schema against the
// table's columns, where the table has a definition) and creates the
// stream in the store, the schema message kept with it.
func (c *arrowCall) open(fd *flight.FlightData) error {
	if why, bad := decodeError(fd); bad {
		return invalid("%s", why)
	}
	switch {
	case len(fd.DataHeader) == 0:
		return invalid("%v: data_header is empty", errSchemaFrame)
	case len(fd.DataBody) != 0:
		return invalid("%v: it has a %d-byte body", errSchemaFrame, len(fd.DataBody))
	case len(fd.AppMetadata) != 0:
		return invalid("%v: it has app_metadata", errSchemaFrame)
	case len(fd.DataHeader) > MaxArrowFrameBytes:
		return invalid("the schema frame's %d bytes exceed the %d-byte frame limit", len(fd.DataHeader), MaxArrowFrameBytes)
	}
	dec, err := newFrameDecoder(fd.DataHeader)
	if err != nil {
		return invalid("%v: %v", errSchemaFrame, err)
	}
	if def := c.s.opts.Tables.lookup(c.table); def != nil {
		if err := arrowFitsTable(dec.schema, def.check.Fields()); err != nil {
			dec.close()
			return invalid("the Arrow schema does not fit table %s: %v", def.name, err)
		}
	}
	if f, ok := c.s.takeFault(faults.At{Open: true}, c.table, "", KindEphemeral, FaultFailOpen); ok {
		dec.close()
		return faultStatus(f, codes.Unavailable, "injected fault: open failed")
	}
	id, err := newStreamID(KindEphemeral)
	if err != nil {
		dec.close()
		return status.Errorf(codes.Internal, "stream id: %v", err)
	}
	meta := StreamMeta{
		ID: "as-" + id[len("es-"):], Kind: KindEphemeral, Table: c.table, Principal: c.principal.Name,
		RecordType: RecordTypeArrow, ArrowSchema: encapsulate(fd.DataHeader, nil),
	}
	stored, _, err := c.s.store.CreateStream(c.ctx, meta)
	if err != nil {
		dec.close()
		return storeStatus(err)
	}
	c.id, c.dec = stored.ID, dec
	c.s.arrowCounts.add(c.id, &c.tally)
	c.s.log.Info("arrow stream opened", "principal", c.principal.Name, "stream", c.id, "table", c.table,
		"columns", fmt.Sprint(dec.schema.NumFields()))
	return nil
}
