package zbstream

// The client's HTTP client for its workspace: the OAuth token endpoint and
// the Unity Catalog tables API. One per Client, trusting what the gRPC
// connection trusts, with a transport of its own.

import (
	"net/http"

	"github.com/zbstream/zbstream/grpcio"
)

// newWorkspaceHTTP returns the HTTP client of a Client's workspace
// requests: TLS as grpcio.WorkspaceTLSConfig derives it from the dial
// options (WithCAFile, WithCAPEM and WithTLSConfig apply to the workspace
// too, so that one behind the endpoint's private CA is reached; without
// them, the system roots), the OAuth timeout, and no redirect followed (a
// token request or a schema read is never sent on elsewhere with its
// credentials). Its transport is its own, so that Close can drop its idle
// connections without touching http.DefaultTransport's.
func newWorkspaceHTTP(dial grpcio.DialOptions) (*http.Client, error) {
	tlsConf, err := grpcio.WorkspaceTLSConfig(dial)
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = http.DefaultTransport
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = tr.Clone()
		if tlsConf != nil {
			tr.TLSClientConfig = tlsConf
		}
		rt = tr
	}
	return &http.Client{
		Transport:     rt,
		Timeout:       grpcio.DefaultOAuthTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}
