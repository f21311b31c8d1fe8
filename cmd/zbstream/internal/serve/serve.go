package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server"
)

// The admin endpoint's timeouts (its defaults are cli's).
const (
	adminStopTimeout  = 2 * time.Second
	adminReadTimeouts = 10 * time.Second
	adminWriteTimeout = 30 * time.Second // a page written to a client that does not read
)

const synopsis = `serve [flags]

Runs the reference Zerobus-compatible server until Ctrl-C or SIGTERM, then
stops gracefully (live calls commit what they received), closes the store
and exits 0. It prints its endpoint (and admin URL) on stdout, logs to stderr.

Authentication: each -token name:TOKEN:catalog.schema.table[,table...] ("*"
for every table) adds a principal; -tokens-file reads the same, one a line.
With no token the server is in open mode (no credentials, every table
writable), which on an address other than loopback needs -open.

Admin endpoint (for "zbstream streams"): read-only JSON over HTTP on -admin
(default ` + cli.DefaultAdminAddr + `, "off" to disable): GET /v1/streams,
/v1/streams/{id}, /v1/streams/{id}/records?from=OFFSET&limit=N. With tokens,
it wants "Authorization: Bearer TOKEN" and shows a principal only its own
streams. It speaks TLS when the server does.

OAuth (programs written for the official SDKs, with no workspace): each
-oauth CLIENT_ID:SECRET[:table,...] adds a service principal, and the admin
address then also serves the workspace's token endpoint, POST
/oidc/v1/token (client credentials, HTTP Basic), printed as "workspace:".
Pass that URL as the workspace (Unity Catalog) URL and the endpoint as the
Zerobus endpoint. A token is scoped to the tables its request names in
authorization_details (without a table list the client may ask for any;
a secret containing ':' needs the list, "*" for all) and the server accepts
it for those tables only, for an hour. The admin API itself takes only
-token tokens.

Tables with schemas: -tables PATH loads Unity Catalog table definitions (a
file of table objects as GET /api/2.1/unity-catalog/tables/{name} returns
them, or a directory of *.json such files). A stream of a table with a
definition must fit its columns at open, and every record is checked
against them (unknown column, wrong type, NULL in a NOT NULL column:
INVALID_ARGUMENT naming the field). The admin address serves the
definitions at that path, authorized like the gRPC server (any token of a
principal that may write the table, OAuth tokens included).`

// maxBytes bounds -receive-budget and -max-message-bytes.
const maxBytes int64 = 1 << 62

// config is what the serve flags say.
type config struct {
	addr, admin      string
	data, engine     string
	tokens           tokenSpecs
	oauth            tokenSpecs
	tokensFile       string
	tables           string
	open             bool
	tlsCert, tlsKey  string
	logLevel, logFmt string
	opts             server.Options
	receiveBudget    int64
	maxMessage       int64
	maxConcurrent    uint
}

func flags(stderr io.Writer) (*flag.FlagSet, *config) {
	c := &config{}
	fs := cli.NewFlags("serve", synopsis, stderr)
	fs.StringVar(&c.addr, "addr", cli.DefaultServeAddr, "`host:port` to serve gRPC on (port 0: any free port, printed)")
	fs.StringVar(&c.admin, "admin", cli.DefaultAdminAddr, "`host:port` of the read-only admin HTTP endpoint, or \"off\"")
	fs.StringVar(&c.data, "data", defaultDataDir(), "`directory` of the bolt engine's database (created if missing)")
	fs.StringVar(&c.engine, "engine", "bolt", "storage `engine`: bolt (durable), memory (lost at exit) or ackonly (stores nothing, for benchmarks)")
	fs.Var(&c.tokens, "token", "add a principal: `name:TOKEN:table[,table...]`, tables catalog.schema.table or \"*\" (all); repeatable")
	fs.Var(&c.oauth, "oauth", "add an OAuth client for the token endpoint on -admin: `CLIENT_ID:SECRET[:table,...]`; repeatable")
	fs.StringVar(&c.tables, "tables", "", "Unity Catalog table definitions to check records against: a JSON `file` or a directory of them")
	fs.StringVar(&c.tokensFile, "tokens-file", "", "`file` of token specs, one a line (# comments), kept out of the process list")
	fs.BoolVar(&c.open, "open", false, "open mode (no credentials) even on an address other than loopback")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate `file` (PEM); with -tls-key the server speaks TLS")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key `file` (PEM)")
	fs.DurationVar(&c.opts.SessionAge, "rotate", 0, "rotate every connection after this `duration` with a close signal (0: never)")
	fs.DurationVar(&c.opts.CloseGrace, "grace", 5*time.Second, "`duration` a rotation's close signal announces before the call ends")
	fs.BoolVar(&c.opts.StrictDuplicates, "strict-duplicates", false, "compare every resent record with the stored one; refuse a different payload")
	fs.DurationVar(&c.opts.FirstMessageTimeout, "first-message-timeout", server.DefaultFirstMessageTimeout, "end a call that sends no first message within this `duration`")
	fs.DurationVar(&c.opts.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "rotate an opened stream idle for this `duration`")
	fs.UintVar(&c.maxConcurrent, "max-concurrent-streams", server.DefaultMaxConcurrentStreams, "`n` concurrent calls per HTTP/2 connection")
	fs.IntVar(&c.opts.MaxConnectionsPerPrincipal, "max-connections-per-principal", server.DefaultMaxConnectionsPerPrincipal, "`n` concurrent stream calls per principal")
	cli.ByteSizeVar(fs, &c.receiveBudget, "receive-budget", server.DefaultReceiveBudget, "server-wide `bytes` of received requests queued before reading pauses (e.g. 256MiB; "+cli.SizeUnits+")")
	cli.ByteSizeVar(fs, &c.maxMessage, "max-message-bytes", server.DefaultMaxMessageBytes, "largest request message accepted, in `bytes` (e.g. 10MiB; "+cli.SizeUnits+")")
	fs.DurationVar(&c.opts.KeepaliveMinTime, "keepalive-min-time", server.DefaultKeepaliveMinTime, "shortest `interval` between client pings tolerated")
	fs.DurationVar(&c.opts.KeepaliveTime, "keepalive-time", server.DefaultKeepaliveTime, "ping a transport silent for this `duration`")
	fs.DurationVar(&c.opts.KeepaliveTimeout, "keepalive-timeout", server.DefaultKeepaliveTimeout, "close a transport whose ping is not answered within this `duration`")
	fs.DurationVar(&c.opts.StopGrace, "stop-grace", 5*time.Second, "at Ctrl-C, the `duration` live calls get to end before they are cut")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.logFmt, "log-format", "text", "log `format` on stderr: text or json")
	return fs, c
}

// defaultDataDir is the bolt directory used without -data: zbstream/server
// under the user's cache directory ("" if there is none: -data is then
// required).
func defaultDataDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "zbstream", "server")
}

// Run is the serve command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, c := flags(stderr)
	if err := cli.Parse(fs, args, false); err != nil {
		return err
	}
	log, err := logger(stderr, c.logLevel, c.logFmt)
	if err != nil {
		return err
	}
	auth, tokens, clients, err := c.check()
	if err != nil {
		return err
	}
	opts := c.opts
	opts.Auth, opts.Logger = auth, log
	opts.MaxMessageBytes = int(c.maxMessage)
	opts.ReceiveBudget = c.receiveBudget
	memLimit := setMemoryLimit(c.engine, opts.ReceiveBudget)
	opts.MaxConcurrentStreams = uint32(c.maxConcurrent)
	if c.tables != "" {
		if opts.Tables, err = server.LoadTables(c.tables); err != nil {
			return cli.WithCode(cli.ExitInput, fmt.Errorf("-tables: %w", err))
		}
	}
	var tlsConf *tls.Config
	if c.tlsCert != "" {
		if tlsConf, err = loadTLS(c.tlsCert, c.tlsKey); err != nil {
			return err
		}
		opts.TLS = tlsConf
	}

	var store server.Store
	switch c.engine {
	case "bolt":
		bs, err := admin.OpenBolt(c.data)
		if err != nil {
			return err
		}
		store = bs
	case "memory":
		store = server.NewMemoryStore()
	case "ackonly":
		opts.Engine = server.EngineAckOnly
	}
	if store != nil {
		opts.Store = store
		defer store.Close() // after the server has stopped
	}
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	defer srv.Stop() // idempotent: a no-op after the graceful stop below

	lis, err := listen("server", c.addr)
	if err != nil {
		return err
	}
	var adminLis net.Listener
	if c.admin != "off" && c.admin != "" {
		if adminLis, err = listen("admin endpoint", c.admin); err != nil {
			lis.Close()
			return err
		}
	}

	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	if tlsConf == nil && (len(tokens) > 0 || len(clients) > 0) {
		for _, a := range []string{c.addr, c.admin} {
			if a != "off" && a != "" && !isLoopbackAddr(a) {
				log.Warn("bearer tokens travel in plaintext on a non-loopback address: use -tls-cert/-tls-key", "addr", a)
			}
		}
	}
	log.Info("zbstream server listening", "addr", lis.Addr().String(), "engine", c.engine, "data", dataLog(c),
		"tls", tlsConf != nil, "auth", authLog(tokens, clients), "strict_duplicates", opts.StrictDuplicates,
		"rotate", opts.SessionAge, "memory_limit", memLimit)
	fmt.Fprintf(stdout, "endpoint: %s://%s\n", scheme, lis.Addr())

	errc := make(chan error, 2)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { errc <- srv.Serve(lis) })
	var adminSrv *http.Server
	if adminLis == nil && opts.Tables != nil {
		log.Warn("-admin is off: the table definitions are checked but not served", "tables", opts.Tables.Names())
	}
	if adminLis != nil {
		var lookup admin.Lookup // open mode without tokens
		if len(tokens) > 0 {
			lookup = tokens.lookup
		}
		handler := admin.NewServerHandler(srv, lookup, log, admin.DefaultLimits())
		if len(clients) > 0 || opts.Tables != nil {
			mux := http.NewServeMux()
			if len(clients) > 0 {
				ep, err := server.NewTokenEndpoint(auth, clients, server.TokenEndpointOptions{Logger: log})
				if err != nil {
					return err
				}
				mux.Handle(server.TokenPath, ep)
				if len(tokens) == 0 {
					// Without -token the admin API would be open while the
					// gRPC server is not: refuse it instead.
					handler = adminWithoutTokens{}
				}
			}
			if opts.Tables != nil {
				mux.Handle(server.TablesPath, server.NewTablesHandler(opts.Tables, auth))
			}
			mux.Handle("/", handler)
			handler = mux
		}
		adminSrv = &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: adminReadTimeouts,
			ReadTimeout:       adminReadTimeouts,
			WriteTimeout:      adminWriteTimeout,
			IdleTimeout:       time.Minute,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		if tlsConf != nil {
			adminSrv.TLSConfig = tlsConf.Clone()
			adminLis = tls.NewListener(adminLis, adminSrv.TLSConfig)
		}
		log.Info("admin endpoint listening", "addr", adminLis.Addr().String())
		fmt.Fprintf(stdout, "admin: %s://%s\n", scheme, adminLis.Addr())
		if len(clients) > 0 {
			log.Info("OAuth token endpoint", "url", fmt.Sprintf("%s://%s%s", scheme, adminLis.Addr(), server.TokenPath), "clients", len(clients))
		}
		if opts.Tables != nil {
			log.Info("Unity Catalog tables API", "url", fmt.Sprintf("%s://%s%s", scheme, adminLis.Addr(), server.TablesPath), "tables", opts.Tables.Names())
		}
		if len(clients) > 0 || opts.Tables != nil {
			fmt.Fprintf(stdout, "workspace: %s://%s\n", scheme, adminLis.Addr())
		}
		wg.Go(func() {
			if err := adminSrv.Serve(adminLis); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("admin endpoint: %w", err)
			}
		})
	}

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping: finishing live calls (Ctrl-C again to cut them)", "grace", opts.StopGrace)
		// A second signal cuts the live calls at once; nothing acknowledged
		// is lost either way.
		force := make(chan os.Signal, 1)
		signal.Notify(force, os.Interrupt, syscall.SIGTERM)
		stopped := make(chan struct{})
		defer func() { signal.Stop(force); close(stopped) }()
		go func() {
			select {
			case <-force:
				log.Warn("second signal: cutting live calls")
				srv.Stop()
			case <-stopped:
			}
		}()
	case serveErr = <-errc:
		log.Error("server failed", "err", serveErr)
	}
	if adminSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), adminStopTimeout)
		if err := adminSrv.Shutdown(sctx); err != nil {
			adminSrv.Close()
		}
		cancel()
	}
	srv.GracefulStop()
	if store != nil {
		if err := store.Close(); err != nil && serveErr == nil {
			serveErr = fmt.Errorf("close store: %w", err)
		}
	}
	if serveErr != nil {
		return serveErr
	}
	log.Info("stopped")
	return nil
}

// check validates the flags together and builds the authentication: the
// Auth, the static tokens and the OAuth clients.
func (c *config) check() (*server.Auth, tokenTable, []server.OAuthClient, error) {
	auth, tokens, err := c.checkTokens()
	if err != nil {
		return nil, nil, nil, err
	}
	clients, err := buildOAuth(c.oauth)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(clients) == 0 {
		return auth, tokens, nil, nil
	}
	switch {
	case c.open:
		return nil, nil, nil, cli.UsageErr("-open and -oauth exclude each other")
	case c.admin == "off" || c.admin == "":
		return nil, nil, nil, cli.UsageErr("-oauth serves the token endpoint on the admin address: it needs -admin")
	}
	if auth == nil {
		auth = server.NewAuth(nil)
	}
	return auth, tokens, clients, nil
}

// checkTokens validates the flags other than -oauth and builds the
// authentication of the static tokens.
func (c *config) checkTokens() (*server.Auth, tokenTable, error) {
	switch c.engine {
	case "bolt":
		if c.data == "" {
			return nil, nil, cli.UsageErr("-engine bolt needs -data DIR (no user cache directory to default to)")
		}
	case "memory", "ackonly":
	case "ack-only":
		c.engine = "ackonly"
	default:
		return nil, nil, cli.UsageErr("-engine %q: want bolt, memory or ackonly", c.engine)
	}
	if err := checkHostPort("-addr", c.addr); err != nil {
		return nil, nil, err
	}
	if c.admin != "off" && c.admin != "" {
		if err := checkHostPort("-admin", c.admin); err != nil {
			return nil, nil, err
		}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, nil, cli.UsageErr("-tls-cert and -tls-key go together")
	}
	switch {
	case c.opts.SessionAge < 0, c.opts.CloseGrace < 0, c.opts.FirstMessageTimeout < 0, c.opts.IdleTimeout < 0, c.opts.StopGrace < 0,
		c.opts.KeepaliveMinTime < 0, c.opts.KeepaliveTime < 0, c.opts.KeepaliveTimeout < 0:
		return nil, nil, cli.UsageErr("durations must not be negative")
	case c.opts.MaxConnectionsPerPrincipal < 0:
		return nil, nil, cli.UsageErr("-max-connections-per-principal must not be negative")
	// 0 would be the library's default; the bound leaves room for the
	// memory limit's headroom and for 9/8 of a message.
	case c.receiveBudget == 0 || c.receiveBudget > maxBytes:
		return nil, nil, cli.UsageErr("-receive-budget must be between 1 and %d bytes", maxBytes)
	case c.maxMessage == 0 || c.maxMessage > maxBytes:
		return nil, nil, cli.UsageErr("-max-message-bytes must be between 1 and %d bytes", maxBytes)
	case c.maxConcurrent > 1<<31-1:
		return nil, nil, cli.UsageErr("-max-concurrent-streams %d is too large", c.maxConcurrent)
	case c.opts.SessionAge > 0 && c.opts.CloseGrace >= c.opts.SessionAge:
		return nil, nil, cli.UsageErr("-grace %v must be shorter than -rotate %v", c.opts.CloseGrace, c.opts.SessionAge)
	}
	tokens, err := buildTokens(c.tokens, c.tokensFile)
	if err != nil {
		return nil, nil, err
	}
	if len(tokens) > 0 {
		if c.open {
			return nil, nil, cli.UsageErr("-open and -token/-tokens-file exclude each other")
		}
		return server.NewAuth(tokens), tokens, nil
	}
	if !c.open && len(c.oauth) == 0 {
		for _, a := range []struct{ flag, addr string }{{"-addr", c.addr}, {"-admin", c.admin}} {
			if a.addr != "off" && a.addr != "" && !isLoopbackAddr(a.addr) {
				return nil, nil, cli.UsageErr("no -token: open mode on %s %s (not loopback) needs -open", a.flag, a.addr)
			}
		}
	}
	return nil, nil, nil
}

// adminWithoutTokens answers the admin API of a server with -oauth clients
// and no -token: 401, since OAuth tokens are for ingestion only.
type adminWithoutTokens struct{}

func (adminWithoutTokens) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="zbstream"`)
	admin.WriteJSON(w, http.StatusUnauthorized, admin.ErrorBody{Error: "the admin API takes -token tokens, and this server has none (only -oauth clients)"})
}

// checkHostPort refuses an address net.Listen would not take.
func checkHostPort(flagName, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return cli.UsageErr("%s %q: want host:port (%v)", flagName, addr, err)
	}
	return nil
}

// isLoopbackAddr reports whether host:port names a loopback host.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listen opens a TCP listener with a clear error for a port in use.
func listen(what, addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s: address %s is already in use (another zbstream serve? pick another with -addr/-admin, port 0 for any)", what, addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", what, addr, err)
	}
	return lis, nil
}

// loadTLS loads the key pair; a missing or bad file is an input error.
func loadTLS(cert, key string) (*tls.Config, error) {
	for _, f := range []string{cert, key} {
		if _, err := os.Stat(f); err != nil {
			return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("TLS: %w", err))
		}
	}
	conf, err := server.LoadTLS(cert, key)
	if err != nil {
		return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("TLS certificate %s / key %s: %w", cert, key, err))
	}
	return conf, nil
}

func logger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, cli.UsageErr("-log-level %q: want debug, info, warn or error", level)
	}
	ho := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, cli.UsageErr("-log-format %q: want text or json", format)
}

func dataLog(c *config) string {
	if c.engine == "bolt" {
		return c.data
	}
	return "(none)"
}

func authLog(t tokenTable, clients []server.OAuthClient) string {
	switch {
	case len(t) == 0 && len(clients) == 0:
		return "open"
	case len(clients) == 0:
		return fmt.Sprintf("%d token(s)", len(t))
	}
	return fmt.Sprintf("%d token(s), %d OAuth client(s)", len(t), len(clients))
}
