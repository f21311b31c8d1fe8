package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
)

// A mutant is one small change to one file: the bytes [start, end) of the
// file are replaced by repl.
type mutant struct {
	ID   string // stable name: file, function, operator, code before => after
	File string // path of the file, as given to findMutants
	Name string // the file's name in IDs and reports
	Line int
	Op   string

	start, end int
	repl       string
}

// apply returns src with the mutant's change.
func (m mutant) apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.repl))
	out = append(out, src[:m.start]...)
	out = append(out, m.repl...)
	return append(out, src[m.end:]...)
}

// Binary operator replacements. Each comparison gets its boundary mutant
// (< to <=) and its negation (< to >=); == and != swap.
var binaryOps = map[token.Token][]struct {
	op   string
	with token.Token
}{
	token.LSS:  {{"boundary", token.LEQ}, {"negate", token.GEQ}},
	token.LEQ:  {{"boundary", token.LSS}, {"negate", token.GTR}},
	token.GTR:  {{"boundary", token.GEQ}, {"negate", token.LEQ}},
	token.GEQ:  {{"boundary", token.GTR}, {"negate", token.LSS}},
	token.EQL:  {{"negate", token.NEQ}},
	token.NEQ:  {{"negate", token.EQL}},
	token.ADD:  {{"arith", token.SUB}},
	token.SUB:  {{"arith", token.ADD}},
	token.MUL:  {{"arith", token.QUO}},
	token.QUO:  {{"arith", token.MUL}},
	token.REM:  {{"arith", token.MUL}},
	token.LAND: {{"logical", token.LOR}},
	token.LOR:  {{"logical", token.LAND}},
	token.AND:  {{"bitwise", token.OR}},
	token.OR:   {{"bitwise", token.AND}},
	token.XOR:  {{"bitwise", token.AND}},
	token.SHL:  {{"bitwise", token.SHR}},
	token.SHR:  {{"bitwise", token.SHL}},
}

var assignOps = map[token.Token]token.Token{
	token.ADD_ASSIGN: token.SUB_ASSIGN,
	token.SUB_ASSIGN: token.ADD_ASSIGN,
	token.MUL_ASSIGN: token.QUO_ASSIGN,
	token.QUO_ASSIGN: token.MUL_ASSIGN,
	token.OR_ASSIGN:  token.AND_ASSIGN,
	token.AND_ASSIGN: token.OR_ASSIGN,
}

// findMutants parses one Go file and returns its mutants, in source order.
// Only function bodies are mutated. name is the file's name in IDs.
func findMutants(path, name string, src []byte) ([]mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	g := &gen{fset: fset, src: src, path: path, name: name, seen: map[string]int{}}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		g.fn = funcName(fd)
		g.void = fd.Type.Results == nil || len(fd.Type.Results.List) == 0
		g.body = fd.Body
		ast.Inspect(fd.Body, g.visit)
	}
	slices.SortStableFunc(g.out, func(a, b mutant) int { return a.start - b.start })
	return g.out, nil
}

type gen struct {
	fset *token.FileSet
	src  []byte
	path string
	name string
	fn   string
	void bool
	body *ast.BlockStmt
	seen map[string]int
	out  []mutant
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func (g *gen) off(p token.Pos) int { return g.fset.Position(p).Offset }

// text is the source of n on one line, shortened for an ID.
func (g *gen) text(from, to int) string {
	s := strings.Join(strings.Fields(string(g.src[from:to])), " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// add records a mutant that replaces [start, end) with repl; ctx is the
// node whose source (before and after) names the mutant.
func (g *gen) add(op string, ctx ast.Node, start, end int, repl string) {
	cs, ce := g.off(ctx.Pos()), g.off(ctx.End())
	before := g.text(cs, ce)
	after := string(g.src[cs:start]) + repl + string(g.src[end:ce])
	after = strings.Join(strings.Fields(after), " ")
	if len(after) > 100 {
		after = after[:97] + "..."
	}
	if before == "" {
		before = "(statement)"
	}
	if after == "" {
		after = "(nothing)"
	}
	id := fmt.Sprintf("%s:%s: %s: %s => %s", g.name, g.fn, op, before, after)
	g.seen[id]++
	if n := g.seen[id]; n > 1 {
		id += fmt.Sprintf(" #%d", n)
	}
	g.out = append(g.out, mutant{
		ID: id, File: g.path, Name: g.name, Line: g.fset.Position(ctx.Pos()).Line, Op: op,
		start: start, end: end, repl: repl,
	})
}

func isString(e ast.Expr) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Kind == token.STRING
}

func isCall(e ast.Expr, names ...string) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := c.Fun.(*ast.Ident)
	if !ok {
		return false
	}
	for _, n := range names {
		if id.Name == n {
			return true
		}
	}
	return false
}

func (g *gen) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.BinaryExpr:
		if (n.Op == token.ADD) && (isString(n.X) || isString(n.Y)) {
			break // string concatenation
		}
		for _, r := range binaryOps[n.Op] {
			p := g.off(n.OpPos)
			g.add(r.op, n, p, p+len(n.Op.String()), r.with.String())
		}
	case *ast.AssignStmt:
		if with, ok := assignOps[n.Tok]; ok {
			p := g.off(n.TokPos)
			g.add("arith", n, p, p+len(n.Tok.String()), with.String())
		}
	case *ast.IncDecStmt:
		with := token.DEC
		if n.Tok == token.DEC {
			with = token.INC
		}
		p := g.off(n.TokPos)
		g.add("incdec", n, p, p+2, with.String())
	case *ast.UnaryExpr:
		if n.Op == token.NOT || (n.Op == token.SUB && !isLit(n.X)) {
			p := g.off(n.OpPos)
			g.add("unary", n, p, p+1, "")
		}
	case *ast.IfStmt:
		switch c := n.Cond.(type) {
		case *ast.BinaryExpr, *ast.UnaryExpr:
			// Mutated by the operator mutants.
		default:
			s, e := g.off(c.Pos()), g.off(c.End())
			g.add("negate", c, s, e, "!("+string(g.src[s:e])+")")
		}
	case *ast.CallExpr:
		if isCall(n, "max", "min") {
			id := n.Fun.(*ast.Ident)
			with := map[string]string{"max": "min", "min": "max"}[id.Name]
			p := g.off(id.Pos())
			g.add("minmax", n, p, p+3, with)
			// And the call replaced by each of its arguments: the bound it
			// keeps is gone.
			for _, a := range n.Args {
				g.add("minmax", n, g.off(n.Pos()), g.off(n.End()), string(g.src[g.off(a.Pos()):g.off(a.End())]))
			}
		}
	case *ast.Ident:
		if n.Name == "true" || n.Name == "false" {
			with := map[string]string{"true": "false", "false": "true"}[n.Name]
			g.add("bool", n, g.off(n.Pos()), g.off(n.End()), with)
		}
	case *ast.BlockStmt:
		g.deletions(n.List, n == g.body)
	case *ast.CaseClause:
		g.deletions(n.Body, false)
	}
	return true
}

func isLit(e ast.Expr) bool {
	_, ok := e.(*ast.BasicLit)
	return ok
}

// deletions adds a mutant removing each statement of a block that has an
// effect the tests should see: a call (not a panic), an assignment (not a
// declaration), an increment, and an early bare return of a function
// without results.
func (g *gen) deletions(list []ast.Stmt, funcBody bool) {
	for i, s := range list {
		switch s := s.(type) {
		case *ast.ExprStmt:
			if isCall(s.X, "panic") {
				continue
			}
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				continue
			}
		case *ast.IncDecStmt:
		case *ast.ReturnStmt:
			if !g.void || len(s.Results) > 0 || (funcBody && i == len(list)-1) {
				continue
			}
		default:
			continue
		}
		g.add("delete", s, g.off(s.Pos()), g.off(s.End()), "")
	}
}
