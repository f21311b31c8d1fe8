package zbstream

// Client.TableDescriptor: a Unity Catalog table's proto descriptor, its
// schema fetched from the workspace with a token of its own, cached per
// table until RefreshTableDescriptor. The HTTP request and its retries
// are in tabledesc_fetch.go.

import (
	"context"
	"net/http"
	"net/url"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

// WithWorkspaceURL names the Databricks workspace whose Unity Catalog
// TableDescriptor reads table schemas from, e.g.
// "https://my-workspace.cloud.databricks.com". WithOAuth's workspace is
// the default; set this with WithToken or WithHeadersProvider, whose
// authorization header the schema request then carries. It must be an
// http or https URL with a host and no user info, query or fragment.
func WithWorkspaceURL(workspaceURL string) Option {
	return func(o *clientOptions) error {
		u, err := url.Parse(workspaceURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" ||
			u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return &ConfigError{Field: "WorkspaceURL", Reason: "must be an http or https URL with a host, and no user info, query or fragment"}
		}
		o.workspaceURL = workspaceURL
		return nil
	}
}

// tableCache is the client's state for TableDescriptor.
type tableCache struct {
	descs map[string]*descriptorpb.DescriptorProto // per table
	auth  grpcio.HeadersProvider                   // made on first use
}

// TableDescriptor returns the proto descriptor of table's records
// (catalog.schema.table), for WithJSONToProto: the table's schema is read
// from the workspace's Unity Catalog (GET
// /api/2.1/unity-catalog/tables/{table}) and converted with
// DescriptorFromColumns, its message named after the table. It is read
// once per table and kept for the client's life; after the table's
// schema changed, RefreshTableDescriptor reads it again. The descriptor
// returned is the caller's own copy.
//
// The workspace is WithWorkspaceURL's, or else WithOAuth's. With WithOAuth
// the request carries a token of its own, asked for as the official SDKs
// do (scope all-apis, not down-scoped to a table: the stream's token
// cannot read the catalog), cached and refreshed like the streams'; with
// WithToken or WithHeadersProvider, their authorization header. A client
// with neither is a *ConfigError.
//
// A failed read is a *TableFetchError: an answer over 8 MiB, a redirect
// (never followed), a 4xx answer or a TLS failure at once; a 5xx, 408 or
// 429 answer, a network failure or a token endpoint that is unavailable
// after 3 attempts in all (Retryable then says that a later call may
// succeed). A schema without a proto descriptor is a *SchemaError naming
// the column. When ctx ends first, the error wraps context.Cause(ctx).
func (c *Client) TableDescriptor(ctx context.Context, table string) (*descriptorpb.DescriptorProto, error) {
	if err := CheckTable(table); err != nil {
		return nil, err
	}
	c.mu.Lock()
	d := c.tables.descs[table]
	c.mu.Unlock()
	if d != nil {
		return proto.CloneOf(d), nil
	}
	return c.RefreshTableDescriptor(ctx, table)
}

// RefreshTableDescriptor reads table's schema from Unity Catalog again, as
// TableDescriptor does the first time, keeps the new descriptor for later
// TableDescriptor calls and returns a copy. Call it after the table's
// schema changed (a column added, say); streams already open keep the
// descriptor they were opened with, so open new ones. On error the kept
// descriptor, if any, stays.
func (c *Client) RefreshTableDescriptor(ctx context.Context, table string) (*descriptorpb.DescriptorProto, error) {
	if err := CheckTable(table); err != nil {
		return nil, err
	}
	base, auth, hc, err := c.tableSource()
	if err != nil {
		return nil, err
	}
	f := fetcher{base: base, auth: auth, http: hc, userAgent: grpcio.UserAgent(c.opts.dial.AppName)}
	ts, err := f.fetch(ctx, table)
	if err != nil {
		return nil, err
	}
	if ts.Name == "" && ts.FullName == "" {
		ts.FullName = table
	}
	d, err := ts.Descriptor()
	if err != nil {
		return nil, core.Errorf("zbstream: table %s: %w", table, err)
	}
	c.mu.Lock()
	c.tables.descs[table] = d
	c.mu.Unlock()
	return proto.CloneOf(d), nil
}

// tableSource returns the workspace, the credentials and the HTTP client
// of schema requests, making the OAuth provider on first use.
func (c *Client) tableSource() (string, grpcio.HeadersProvider, *http.Client, error) {
	base := c.opts.workspaceURL
	if base == "" && c.opts.oauth != nil {
		base = c.opts.oauth.WorkspaceURL
	}
	if base == "" {
		return "", nil, nil, &ConfigError{Field: "WorkspaceURL", Reason: "TableDescriptor needs WithOAuth or WithWorkspaceURL"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &c.tables
	if t.auth == nil {
		switch {
		case c.opts.oauth != nil:
			p, err := grpcio.NewOAuth(grpcio.OAuthConfig{
				WorkspaceURL: c.opts.oauth.WorkspaceURL, ClientID: c.opts.oauth.ClientID, ClientSecret: c.opts.oauth.ClientSecret,
				Unscoped: true, HTTPClient: c.http, Logger: c.opts.logger,
			})
			if err != nil {
				return "", nil, nil, err
			}
			t.auth = p
		case c.opts.headers != nil:
			t.auth = c.opts.headers
		default:
			return "", nil, nil, &ConfigError{Field: "Credentials", Reason: "TableDescriptor needs WithOAuth, WithToken or WithHeadersProvider"}
		}
	}
	return base, t.auth, c.http, nil
}
