package serve

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/record"
	"github.com/zbstream/zbstream/server"
)

// tokenSpecs is the repeatable -token flag: name:TOKEN:table[,table...].
type tokenSpecs []string

func (t *tokenSpecs) String() string { return fmt.Sprintf("%d token(s)", len(*t)) }

func (t *tokenSpecs) Set(v string) error {
	*t = append(*t, v)
	return nil
}

// tokenTable maps bearer tokens to principals; it is what the server's Auth
// is built from and what the admin endpoint authenticates with.
type tokenTable map[string]server.Principal

// parseTokenSpec parses name:TOKEN:table[,table...]. The name is before the
// first colon and the tables after the last, so a token may contain
// colons; "*" grants every table. Errors never repeat the token.
func parseTokenSpec(spec string) (token string, p server.Principal, err error) {
	first := strings.Index(spec, ":")
	last := strings.LastIndex(spec, ":")
	if first < 0 || first == last {
		return "", p, errors.New("want name:TOKEN:catalog.schema.table[,table...]")
	}
	name, token, tables := strings.TrimSpace(spec[:first]), spec[first+1:last], spec[last+1:]
	switch {
	case name == "":
		return "", p, errors.New("empty principal name (want name:TOKEN:tables)")
	case strings.TrimSpace(token) == "":
		return "", p, fmt.Errorf("principal %q: empty token", name)
	case strings.TrimSpace(token) != token || strings.ContainsAny(token, " \t\r\n"):
		return "", p, fmt.Errorf("principal %q: the token contains white space", name)
	case strings.TrimSpace(tables) == "":
		return "", p, fmt.Errorf("principal %q: no table (want catalog.schema.table[,table...] or *)", name)
	}
	p.Name = name
	for _, tab := range strings.Split(tables, ",") {
		tab = strings.TrimSpace(tab)
		if tab != server.AllTables {
			if err := record.CheckTable(tab); err != nil {
				return "", server.Principal{}, fmt.Errorf("principal %q: table %q is not catalog.schema.table (or *)", name, tab)
			}
		}
		p.Tables = append(p.Tables, tab)
	}
	return token, p, nil
}

// buildTokens parses the -token specs and the lines of the tokens file (if
// any; blank lines and lines starting with # are skipped).
func buildTokens(specs []string, file string) (tokenTable, error) {
	type src struct{ where, spec string }
	var all []src
	for i, s := range specs {
		all = append(all, src{fmt.Sprintf("-token #%d", i+1), s})
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("tokens file: %w", err))
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			all = append(all, src{fmt.Sprintf("%s:%d", file, n), line})
		}
		if err := sc.Err(); err != nil {
			return nil, cli.WithCode(cli.ExitInput, fmt.Errorf("tokens file %s: %w", file, err))
		}
	}
	tokens := tokenTable{}
	scopes := map[string]server.Principal{} // by name: one scope per principal
	for _, s := range all {
		tok, p, err := parseTokenSpec(s.spec)
		if err != nil {
			code := cli.ExitUsage
			if !strings.HasPrefix(s.where, "-token") {
				code = cli.ExitInput
			}
			return nil, cli.WithCode(code, fmt.Errorf("%s: %w", s.where, err))
		}
		if _, dup := tokens[tok]; dup {
			return nil, cli.WithCode(cli.ExitUsage, fmt.Errorf("%s: principal %q: the same token is given twice", s.where, p.Name))
		}
		// A name is who owns a stream (StreamMeta.Principal): two scopes
		// under one name would let each token resume, retire and read the
		// other's streams.
		if q, seen := scopes[p.Name]; seen && !sameTables(q.Tables, p.Tables) {
			return nil, cli.WithCode(cli.ExitUsage, fmt.Errorf("%s: principal %q is given twice with different tables (%s and %s): use one name per scope",
				s.where, p.Name, strings.Join(q.Tables, ","), strings.Join(p.Tables, ",")))
		}
		scopes[p.Name] = p
		tokens[tok] = p
	}
	return tokens, nil
}

// lookup returns the principal of a bearer token.
func (t tokenTable) lookup(token string) (server.Principal, bool) {
	p, ok := t[token]
	return p, ok
}

// parseOAuthSpec parses an -oauth value, CLIENT_ID:SECRET[:table[,table...]]:
// the id is before the first colon; with a second colon, the tables are
// after the last one (so a secret containing ':' needs the tables part,
// "*" for every table). Without tables the client may get a token for any
// table. Errors never repeat the secret.
func parseOAuthSpec(spec string) (server.OAuthClient, error) {
	var c server.OAuthClient
	id, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return c, errors.New("want CLIENT_ID:SECRET[:catalog.schema.table[,table...]]")
	}
	secret, tables := rest, ""
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		secret, tables = rest[:i], rest[i+1:]
		if strings.TrimSpace(tables) == "" {
			return c, fmt.Errorf("OAuth client %q: empty table list after the last ':'", id)
		}
	}
	switch {
	case strings.TrimSpace(id) == "" || strings.ContainsAny(id, " \t\r\n"):
		return c, errors.New("empty OAuth client id, or one with white space (want CLIENT_ID:SECRET)")
	case secret == "":
		return c, fmt.Errorf("OAuth client %q: empty secret", id)
	}
	c.ID, c.Secret = id, secret
	if tables != "" {
		for _, tab := range strings.Split(tables, ",") {
			tab = strings.TrimSpace(tab)
			if tab != server.AllTables {
				if err := record.CheckTable(tab); err != nil {
					return server.OAuthClient{}, fmt.Errorf("OAuth client %q: table %q is not catalog.schema.table (or *)", id, tab)
				}
			}
			c.Tables = append(c.Tables, tab)
		}
	}
	return c, nil
}

// buildOAuth parses the -oauth specs.
func buildOAuth(specs []string) ([]server.OAuthClient, error) {
	var clients []server.OAuthClient
	seen := map[string]bool{}
	for i, s := range specs {
		c, err := parseOAuthSpec(s)
		if err != nil {
			return nil, cli.UsageErr("-oauth #%d: %v", i+1, err)
		}
		if seen[c.ID] {
			return nil, cli.UsageErr("-oauth #%d: OAuth client %q is given twice", i+1, c.ID)
		}
		seen[c.ID] = true
		clients = append(clients, c)
	}
	return clients, nil
}

// sameTables reports whether two table lists grant the same tables.
func sameTables(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
