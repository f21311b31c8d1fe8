package streams

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server"
)

// streamSource is where "zbstream streams" reads: a running server's admin
// endpoint, or a bolt data directory read directly.
type streamSource interface {
	list(ctx context.Context) ([]admin.StreamInfo, error)
	show(ctx context.Context, id string) (admin.StreamInfo, error)
	// records returns the records at offsets from .. from+limit-1.
	records(ctx context.Context, id string, from int64, limit int) (admin.RecordsPage, error)
	close() error
}

func streamNotFound(id string) error {
	return cli.WithCode(cli.ExitFailure, fmt.Errorf("stream %q not found", id))
}

// adminSource reads a server's admin endpoint.
type adminSource struct {
	base  *url.URL
	token string
	hc    *http.Client
}

const adminRequestTimeout = 30 * time.Second

func newAdminSource(rawURL, token, caFile string) (*adminSource, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, cli.UsageErr("-admin %q: want http://host:port or https://host:port", rawURL)
	}
	tr := &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DisableKeepAlives: true, // one or a few requests: leave no idle connection behind
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("-ca: %w", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("-ca %s: no PEM certificate in it", caFile))
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &adminSource{base: u, token: token, hc: &http.Client{Transport: tr, Timeout: adminRequestTimeout}}, nil
}

func (a *adminSource) close() error {
	a.hc.CloseIdleConnections()
	return nil
}

// get fetches path (relative to the base URL) into out, giving failures
// their exit codes: unreachable 4, refused credentials 5, not found 1.
func (a *adminSource) get(ctx context.Context, path string, q url.Values, out any) error {
	u := a.base.JoinPath(path)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return cli.WithCode(cli.ExitUnreachable, fmt.Errorf("admin endpoint %s unreachable (is \"zbstream serve\" running, with its -admin there?): %w", a.base.Redacted(), unwrapURLError(err)))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return cli.WithCode(cli.ExitUnreachable, fmt.Errorf("admin endpoint %s: reading the answer: %w", a.base.Redacted(), err))
	}
	if resp.StatusCode != http.StatusOK {
		var ae admin.ErrorBody
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &ae) == nil && ae.Error != "" {
			msg = ae.Error
		}
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		err := fmt.Errorf("admin endpoint: %s: %s", resp.Status, msg)
		switch resp.StatusCode {
		case http.StatusNotFound:
			return cli.WithCode(cli.ExitFailure, fmt.Errorf("%w: %w", errAdminNotFound, err))
		case http.StatusUnauthorized, http.StatusForbidden:
			if a.token == "" {
				err = fmt.Errorf("%w (give -token or set $%s)", err, cli.EnvToken)
			}
			return cli.WithCode(cli.ExitAuth, err)
		case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
			return cli.WithCode(cli.ExitUnreachable, err)
		}
		return cli.WithCode(cli.ExitFailure, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("admin endpoint %s: not a zbstream admin answer: %w", a.base.Redacted(), err))
	}
	return nil
}

// unwrapURLError drops the *url.Error wrapper, which repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (a *adminSource) list(ctx context.Context) ([]admin.StreamInfo, error) {
	var l admin.StreamsList
	if err := a.get(ctx, "v1/streams", nil, &l); err != nil {
		return nil, err
	}
	return l.Streams, nil
}

func (a *adminSource) show(ctx context.Context, id string) (admin.StreamInfo, error) {
	var s admin.StreamInfo
	err := a.get(ctx, "v1/streams/"+url.PathEscape(id), nil, &s)
	if isNotFound(err) {
		return s, streamNotFound(id)
	}
	return s, err
}

func (a *adminSource) records(ctx context.Context, id string, from int64, limit int) (admin.RecordsPage, error) {
	var p admin.RecordsPage
	q := url.Values{"from": {strconv.FormatInt(from, 10)}, "limit": {strconv.Itoa(limit)}}
	err := a.get(ctx, "v1/streams/"+url.PathEscape(id)+"/records", q, &p)
	if isNotFound(err) {
		return p, streamNotFound(id)
	}
	return p, err
}

// errAdminNotFound: the admin endpoint answered 404.
var errAdminNotFound = errors.New("not found")

func isNotFound(err error) bool { return errors.Is(err, errAdminNotFound) }

// dataSource reads a bolt data directory directly (the server must not be

// dataPageBytes bounds a page read from a -data directory, as the admin
// endpoint bounds its pages. A variable for tests.
var dataPageBytes = admin.DefaultPageBytes

// running on it: bolt locks the file).
type dataSource struct {
	dir   string
	store *server.BoltStore
	r     admin.StoreReader
}

func openDataSource(dir string) (*dataSource, error) {
	if _, err := os.Stat(filepath.Join(dir, server.BoltFileName)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("-data %s: no zbstream database (%s) there", dir, server.BoltFileName))
		}
		return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("-data: %w", err))
	}
	st, err := admin.OpenBolt(dir)
	if err != nil {
		return nil, cli.WithCode(cli.ExitFailure, fmt.Errorf("%w; read it through the server instead (-admin)", err))
	}
	return &dataSource{dir: dir, store: st, r: admin.StoreReader{Store: st, PageBytes: dataPageBytes}}, nil
}

func (d *dataSource) close() error { return d.store.Close() }

func (d *dataSource) list(ctx context.Context) ([]admin.StreamInfo, error) {
	metas, err := d.r.Streams(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]admin.StreamInfo, len(metas))
	for i, m := range metas {
		out[i] = admin.ToStreamInfo(m)
	}
	return out, nil
}

func (d *dataSource) meta(ctx context.Context, id string) (server.StreamMeta, error) {
	m, err := d.r.Stream(ctx, id)
	if errors.Is(err, server.ErrStreamNotFound) {
		return m, streamNotFound(id)
	}
	return m, err
}

func (d *dataSource) show(ctx context.Context, id string) (admin.StreamInfo, error) {
	m, err := d.meta(ctx, id)
	if err != nil {
		return admin.StreamInfo{}, err
	}
	return admin.ToStreamInfo(m), nil
}

func (d *dataSource) records(ctx context.Context, id string, from int64, limit int) (admin.RecordsPage, error) {
	m, err := d.meta(ctx, id)
	if err != nil {
		return admin.RecordsPage{}, err
	}
	return d.r.Page(ctx, m, from, limit)
}

// retire retires a persistent stream in the data directory, as the
// RetireStream RPC would, and returns its watermark.
func (d *dataSource) retire(ctx context.Context, id string) (int64, error) {
	m, err := d.meta(ctx, id)
	if err != nil {
		return 0, err
	}
	if m.Kind != server.KindPersistent {
		return 0, cli.WithCode(cli.ExitFailure, fmt.Errorf("stream %q is ephemeral: only persistent streams can be retired", id))
	}
	return d.store.Retire(ctx, id)
}
