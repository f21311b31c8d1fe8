// Package admin is the admin endpoint of "zbstream serve": a small,
// read-only JSON API over HTTP that "zbstream streams" reads. Its JSON types,
// its handler and the reads of a server's store live here, so that the
// handler and the streams command (over HTTP, or with -data straight from a
// bolt directory) share one definition of each. It lives in the command,
// not in server/, and reads the server's store through server.Store.
//
//	GET /v1/streams                                  {"streams": [stream...]}
//	GET /v1/streams/{id}                             stream
//	GET /v1/streams/{id}/records?from=OFFSET&limit=N records page
//
// A stream is a StreamInfo (served by a running server, NewServerHandler,
// an Arrow stream's also carries what the server counted of its call:
// frames and rows received, stored and acknowledged), a records page a
// RecordsPage: the batches
// stored at offsets from .. from+limit-1 (limit counts offsets, default
// DefaultLimit, at most MaxLimit; a batch ingested at one offset gives all
// its records; a page stops early after Limits.PageBytes of records), and
// next is the offset to ask for next (past the watermark: none left). A
// JSON record is shown as JSON, an Avro record decoded to JSON with its
// stream's writer schema (avro.go), an Arrow frame as one JSON object per
// row, at the frame's offset and the row's index (arrow.go), a proto
// record as base64 bytes.
// Errors are an ErrorBody with 400, 401, 404, 405 or 503.
//
// With tokens, every request needs "Authorization: Bearer TOKEN" and a
// token sees only the streams its principal owns (those it created) on the
// tables the token is scoped to, as the Zerobus service answers another
// principal's resume with NOT_FOUND. In open mode everything is visible.
package admin
