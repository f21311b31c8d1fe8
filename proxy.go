package zbstream

import "github.com/zbstream/zbstream/grpcio"

// ProxyFunc chooses the HTTP CONNECT proxy for an endpoint (WithProxy): a
// nil URL and nil error mean a direct connection. It is grpcio.ProxyFunc,
// re-exported so that a proxy policy of one's own needs only this package.
type ProxyFunc = grpcio.ProxyFunc

// Endpoint is a parsed Zerobus endpoint, as a ProxyFunc is given it: its
// host, its port and whether it is plaintext (an http:// endpoint). It is
// grpcio.Endpoint, re-exported.
type Endpoint = grpcio.Endpoint
