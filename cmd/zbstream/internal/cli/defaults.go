package cli

// The addresses serve listens on by default, and the URLs the streams
// command reaches it at by default; the token the client commands read
// from the environment.
const (
	DefaultServeAddr = "127.0.0.1:7443"
	DefaultAdminAddr = "127.0.0.1:7444"
	DefaultEndpoint  = "http://" + DefaultServeAddr
	DefaultAdminURL  = "http://" + DefaultAdminAddr
	EnvToken         = "ZBSTREAM_TOKEN"
)
