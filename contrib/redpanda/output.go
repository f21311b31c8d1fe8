package zbredpanda

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// ErrRefused is wrapped by the error of a message whose record the server
// would refuse (not a JSON object, not a message of the type) or that is
// larger than a call may be: resending it cannot succeed.
var ErrRefused = errors.New("zerobus: record refused")

// Register adds the zerobus output to env. Client options (an observer for
// metrics, TLS settings) apply to every stream the output opens.
func Register(env *service.Environment, opts ...zbstream.Option) error {
	return env.RegisterBatchOutput("zerobus", Spec(),
		func(pc *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			var policy service.BatchPolicy
			c, err := parseConfig(pc)
			if err != nil {
				return nil, policy, 0, err
			}
			maxInFlight, err := pc.FieldMaxInFlight()
			if err != nil {
				return nil, policy, 0, err
			}
			if policy, err = pc.FieldBatchPolicy(fieldBatching); err != nil {
				return nil, policy, 0, err
			}
			o, err := newOutput(c, opts, mgr.Logger())
			return o, policy, maxInFlight, err
		})
}

// output writes batches into one stream per table, opened on first use.
type output struct {
	conf       config
	clientOpts []zbstream.Option
	streamOpts []zbstream.StreamOption
	check      *record.Checker
	log        *service.Logger

	mu      sync.Mutex
	client  *zbstream.Client
	streams map[string]*zbstream.Stream
}

func newOutput(c config, opts []zbstream.Option, log *service.Logger) (*output, error) {
	o := &output{conf: c, log: log, streams: make(map[string]*zbstream.Stream)}
	if c.token != "" {
		o.clientOpts = append(o.clientOpts, zbstream.WithToken(c.token))
	} else {
		o.clientOpts = append(o.clientOpts, zbstream.WithOAuth(c.workspaceURL, c.clientID, c.secret))
	}
	o.clientOpts = append(o.clientOpts, opts...)
	typ, desc := ingestpb.RecordType_JSON, []byte(nil)
	if c.proto {
		m, d, err := loadMessage(c.descriptorFile, c.message)
		if err != nil {
			return nil, err
		}
		o.streamOpts = append(o.streamOpts, zbstream.WithProtoMessage(m))
		typ, desc = ingestpb.RecordType_PROTO, d
	}
	var err error
	o.check, err = record.NewChecker(typ, desc)
	return o, err
}

// Connect makes the client; streams are opened by the first batch for
// their table.
func (o *output) Connect(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.client != nil {
		return nil
	}
	c, err := zbstream.NewClient(o.conf.endpoint, o.clientOpts...)
	if err != nil {
		return err
	}
	o.client = c
	return nil
}

// WriteBatch writes every message of b and returns once all are durable,
// or a *service.BatchError naming the messages that are not.
func (o *output) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	var berr *service.BatchError
	fail := func(i int, err error) {
		if berr == nil {
			berr = service.NewBatchError(b, err)
		}
		berr.Failed(i, err)
	}
	groups := map[string][]int{}
	var tables []string
	for i, m := range b {
		table, err := b.TryInterpolatedString(i, o.conf.table)
		if err != nil {
			fail(i, fmt.Errorf("zerobus: table: %w", err))
			continue
		}
		rec, err := m.AsBytes()
		if err == nil {
			err = o.refuses(rec)
		}
		if err != nil {
			fail(i, err)
			continue
		}
		if groups[table] == nil {
			tables = append(tables, table)
		}
		groups[table] = append(groups[table], i)
	}
	for _, table := range tables {
		o.write(ctx, table, b, groups[table], fail)
	}
	if berr != nil {
		return berr
	}
	return nil
}

// refuses returns why the server would refuse rec, or nil.
func (o *output) refuses(rec []byte) error {
	if n := record.FramedSize(len(rec)); n > core.DefaultMaxCallBytes {
		return fmt.Errorf("%w: %d bytes (%d as sent), more than a call may carry (%d)", ErrRefused, len(rec), n, core.DefaultMaxCallBytes)
	}
	if err := o.check.Check(rec); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return nil
}

// write ingests the messages idx of b into table's stream, in calls of at
// most a call's bytes, and waits until they are durable; it fails those
// that are not.
func (o *output) write(ctx context.Context, table string, b service.MessageBatch, idx []int, fail func(int, error)) {
	s, err := o.stream(ctx, table)
	if err != nil {
		for _, i := range idx {
			fail(i, err)
		}
		return
	}
	type call struct {
		off     int64
		members []int
	}
	var calls []call
	for _, members := range chunks(b, idx, core.DefaultMaxCallBytes) {
		recs := make([][]byte, len(members))
		for j, i := range members {
			recs[j], _ = b[i].AsBytes() // checked by WriteBatch
		}
		off, err := s.IngestBatch(ctx, recs)
		if err != nil {
			for _, i := range members {
				fail(i, err)
			}
			continue
		}
		calls = append(calls, call{off, members})
	}
	for _, c := range calls {
		if err := s.Wait(ctx, c.off); err != nil {
			for _, i := range c.members {
				fail(i, err)
			}
		}
	}
	if s.Err() != nil {
		o.drop(table, s)
	}
}

// chunks splits idx into runs whose records total at most limit bytes as
// a call carries them: each with its framing (record.FramedSize), as the
// stream counts a call against the limit.
func chunks(b service.MessageBatch, idx []int, limit int64) [][]int {
	var out [][]int
	var size int64
	start := 0
	for j, i := range idx {
		rec, _ := b[i].AsBytes()
		n := record.FramedSize(len(rec))
		if j > start && size+n > limit {
			out = append(out, idx[start:j])
			start, size = j, 0
		}
		size += n
	}
	if start < len(idx) {
		out = append(out, idx[start:])
	}
	return out
}

// stream returns table's stream, opening it if there is none.
func (o *output) stream(ctx context.Context, table string) (*zbstream.Stream, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s := o.streams[table]; s != nil {
		return s, nil
	}
	if o.client == nil {
		return nil, service.ErrNotConnected
	}
	open := o.client.CreateStream
	if o.conf.persistent {
		open = o.client.CreatePersistentStream
	}
	s, err := open(ctx, table, o.streamOpts...)
	if err != nil {
		return nil, fmt.Errorf("zerobus: opening a stream to %s: %w", table, err)
	}
	o.log.Debugf("zerobus: opened stream %s to %s", s.StreamID(), table)
	o.streams[table] = s
	return s, nil
}

// drop forgets table's stream s after it failed, so that the next batch
// opens a new one.
func (o *output) drop(table string, s *zbstream.Stream) {
	o.mu.Lock()
	if o.streams[table] == s {
		delete(o.streams, table)
	}
	o.mu.Unlock()
	o.log.Warnf("zerobus: stream %s to %s failed: %v", s.StreamID(), table, s.Err())
	_ = s.Close(context.Background()) // failed: returns at once
}

// Close closes every stream, waiting (within ctx) until what they hold is
// durable, and the client.
func (o *output) Close(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	for table, s := range o.streams {
		if err := s.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("zerobus: closing the stream to %s: %w", table, err))
		}
		delete(o.streams, table)
	}
	if o.client != nil {
		errs = append(errs, o.client.Close())
		o.client = nil
	}
	return errors.Join(errs...)
}
