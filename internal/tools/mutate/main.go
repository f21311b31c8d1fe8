// Command mutate is zbstream's mutation tester. It applies small changes
// (mutants) to a package's non-test Go files one at a time and runs the
// tests that matter for that package against each; a mutant the tests do
// not notice has "survived" and names a behaviour no test pins down.
//
// No file is ever modified: every mutant is handed to the go command as an
// -overlay, and rapid is told not to write fail files (RAPID_NOFAILFILE), so
// the tool can run while other work goes on in the tree. The
// operators are the classic ones: comparison boundaries and negations,
// arithmetic, logical and bitwise operators, ++/--, removal of ! and unary
// minus, negated if conditions, max/min swapped or replaced by one of its
// arguments, true/false swapped, and
// removal of one statement (a call other than panic, an assignment, an
// increment, an early return). A mutant the compiler refuses is "not
// viable" and counts for nothing.
//
// Some surviving mutants do not change behaviour at all: they are
// equivalent, and no test can kill them. They are listed, each with the
// reason, in the file given by -equivalent:
//
//	# comment
//	core/window.go:window.len: ... => ...
//		why it cannot change behaviour (one or more indented lines)
//
// The command exits non-zero when a mutant survives that is not listed,
// when a listed mutant is killed (the list is wrong), or when a listed
// mutant no longer exists (the list is stale). It runs from this module's
// directory:
//
//	go run -C internal/tools/mutate . -root ../../.. -pkg core -tests ./core,./propertytests
//
// The tests run in the order given and stop at the first package that
// fails, with -count=1 -failfast -vet=off and a per-package -timeout.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// limitedFlag, as the first argument, makes the command the go test -exec
// wrapper of the test binaries: it caps their address space, so that a
// mutant that allocates without end (a loop that never stops appending)
// fails fast instead of eating the machine's memory, then runs the binary.
const limitedFlag = "-exec-limited"

// testMemory is the address-space cap of a test binary under a mutant. The
// tests need a small fraction of it.
const testMemory = 4 << 30

func main() {
	if len(os.Args) > 2 && os.Args[1] == limitedFlag {
		execLimited(os.Args[2:])
	}
	root := flag.String("root", ".", "root of the module under test (where go test runs)")
	pkg := flag.String("pkg", "core", "directory of the package to mutate, relative to -root")
	tests := flag.String("tests", "./core,./propertytests", "comma-separated packages whose tests must kill each mutant, run in this order")
	equiv := flag.String("equivalent", "", "file listing equivalent mutants, relative to -root (default <pkg>/testdata/mutate/equivalent.txt)")
	workers := flag.Int("workers", min(2, runtime.NumCPU()), "mutants tested at once")
	timeout := flag.Duration("timeout", 60*time.Second, "test timeout per package and mutant (go test -timeout); a mutant that hangs is killed by it")
	match := flag.String("run", "", "only mutants whose ID matches this regexp (for development; the equivalent list is then not checked for staleness)")
	list := flag.Bool("list", false, "list the mutants and exit")
	verbose := flag.Bool("v", false, "print every mutant's outcome, not only survivors")
	flag.Parse()
	if *equiv == "" {
		*equiv = filepath.Join(*pkg, "testdata", "mutate", "equivalent.txt")
	}
	if err := run(config{
		root: *root, pkg: *pkg, tests: strings.Split(*tests, ","), equiv: *equiv,
		workers: max(1, *workers), timeout: *timeout, match: *match, list: *list, verbose: *verbose,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

type config struct {
	root, pkg, equiv string
	tests            []string
	workers          int
	timeout          time.Duration
	match            string
	list, verbose    bool
}

type outcome int

const (
	killed outcome = iota
	survived
	notViable
)

type result struct {
	m       mutant
	outcome outcome
	by      string // the package whose tests killed it, or why not viable
	out     string // the go test output of the failing package
	took    time.Duration
}

func run(c config) error {
	root, err := filepath.Abs(c.root)
	if err != nil {
		return err
	}
	files, err := goFiles(root, c.pkg)
	if err != nil {
		return err
	}
	var all []mutant
	srcs := map[string][]byte{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		srcs[f] = src
		rel, _ := filepath.Rel(root, f)
		ms, err := findMutants(f, filepath.ToSlash(rel), src)
		if err != nil {
			return err
		}
		all = append(all, ms...)
	}
	if c.match != "" {
		re, err := regexp.Compile(c.match)
		if err != nil {
			return err
		}
		all = slices.DeleteFunc(all, func(m mutant) bool { return !re.MatchString(m.ID) })
	}
	if c.list {
		for _, m := range all {
			fmt.Printf("%s:%d\t%s\n", m.Name, m.Line, m.ID)
		}
		return nil
	}
	equivalent, err := readEquivalent(filepath.Join(root, c.equiv))
	if err != nil {
		return err
	}

	tmp, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	start := time.Now()
	fmt.Printf("mutate: %d mutants of %s (%d files), tests %s, %d workers\n", len(all), c.pkg, len(files), strings.Join(c.tests, " "), c.workers)
	if r := test(root, "", c); r.outcome != survived {
		return fmt.Errorf("the tests fail without any mutant (%s):\n%s", r.by, r.out)
	}
	fmt.Printf("mutate: unmutated tests pass (%s)\n", time.Since(start).Round(time.Millisecond))

	jobs := make(chan int)
	results := make([]result, len(all))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				m := all[i]
				dir := filepath.Join(tmp, fmt.Sprint(w))
				r, err := testMutant(root, dir, m, srcs[m.File], c)
				if err != nil {
					r = result{m: m, outcome: notViable, by: err.Error()}
				}
				results[i] = r
				mu.Lock()
				done++
				_, listed := equivalent[m.ID]
				if c.verbose || (r.outcome == survived && !listed) || (r.outcome != survived && listed) {
					fmt.Printf("[%d/%d] %-10s line %d: %s (%s, %s)\n", done, len(all), r.label(listed), m.Line, m.ID, r.by, r.took.Round(time.Millisecond))
				} else if done%50 == 0 {
					fmt.Printf("[%d/%d] %s\n", done, len(all), time.Since(start).Round(time.Second))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range all {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	// The tree may have changed under a long run (the tests read it, only
	// the mutants are overlaid): results are worth something only if the
	// unmutated tests still pass.
	if r := test(root, "", c); r.outcome != survived {
		return fmt.Errorf("the tests fail without any mutant at the end of the run; the results are void (%s):\n%s", r.by, r.out)
	}

	var nKilled, nSurvived, nEquiv, nNotViable int
	var problems []string
	found := map[string]bool{}
	for _, r := range results {
		found[r.m.ID] = true
		_, listed := equivalent[r.m.ID]
		switch {
		case r.outcome == notViable:
			nNotViable++
			if listed {
				problems = append(problems, "listed as equivalent but not viable: "+r.m.ID)
			}
		case r.outcome == killed:
			nKilled++
			if listed {
				problems = append(problems, "listed as equivalent but killed: "+r.m.ID)
			}
		case listed:
			nEquiv++
		default:
			nSurvived++
			problems = append(problems, fmt.Sprintf("survived (line %d): %s", r.m.Line, r.m.ID))
		}
	}
	if c.match == "" {
		for id := range equivalent {
			if !found[id] {
				problems = append(problems, "listed as equivalent but no longer exists: "+id)
			}
		}
	}
	viable := nKilled + nSurvived + nEquiv
	rate := 100.0
	if nKilled+nSurvived > 0 {
		rate = 100 * float64(nKilled) / float64(nKilled+nSurvived)
	}
	fmt.Printf("\nmutate: %d mutants: %d viable, %d not viable (refused by the compiler)\n", len(all), viable, nNotViable)
	fmt.Printf("mutate: %d killed, %d equivalent (listed in %s), %d survived\n", nKilled, nEquiv, c.equiv, nSurvived)
	fmt.Printf("mutate: mutation score %.1f%% of non-equivalent mutants killed, in %s\n", rate, time.Since(start).Round(time.Second))
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("%d problems:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

func (r result) label(listed bool) string {
	switch {
	case r.outcome == killed:
		return "KILLED"
	case r.outcome == notViable:
		return "NOT-VIABLE"
	case listed:
		return "EQUIVALENT"
	}
	return "SURVIVED"
}

// goFiles lists the package's non-test Go files in the default build.
func goFiles(root, pkg string) ([]string, error) {
	cmd := exec.Command("go", "list", "-f", `{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`, "./"+filepath.ToSlash(pkg))
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", pkg, err)
	}
	return strings.Fields(string(out)), nil
}

// testMutant writes the mutated file and its overlay into dir and runs the
// tests against it.
func testMutant(root, dir string, m mutant, src []byte, c config) (result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result{}, err
	}
	mutated := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(mutated, m.apply(src), 0o644); err != nil {
		return result{}, err
	}
	overlay := filepath.Join(dir, "overlay.json")
	b, err := json.Marshal(map[string]map[string]string{"Replace": {m.File: mutated}})
	if err != nil {
		return result{}, err
	}
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		return result{}, err
	}
	r := test(root, overlay, c)
	r.m = m
	return r, nil
}

// test runs the test packages in order with the overlay (none if "") and
// stops at the first failure.
func test(root, overlay string, c config) result {
	start := time.Now()
	for _, p := range c.tests {
		// -ldflags=-w: no DWARF, a faster link; the binaries are run once.
		args := []string{"test", "-count=1", "-failfast", "-vet=off", "-ldflags=-w", "-timeout=" + c.timeout.String()}
		if self, err := os.Executable(); err == nil {
			args = append(args, "-exec", self+" "+limitedFlag)
		}
		if overlay != "" {
			args = append(args, "-overlay="+overlay)
		}
		// A generous bound for the build and the run together; the test
		// binary's own -timeout normally ends a hang first.
		ctx, cancel := context.WithTimeout(context.Background(), 3*c.timeout+2*time.Minute)
		cmd := exec.CommandContext(ctx, "go", append(args, p)...)
		cmd.Dir = root
		// A property that fails under a mutant must not leave a rapid
		// fail file in the tree.
		cmd.Env = append(os.Environ(), "RAPID_NOFAILFILE=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if err == nil {
			continue
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) && ctx.Err() == nil {
			return result{outcome: notViable, by: "go test: " + err.Error(), took: time.Since(start)}
		}
		if buildFailed(out.Bytes()) {
			return result{outcome: notViable, by: "build failed: " + firstError(out.Bytes()), took: time.Since(start), out: out.String()}
		}
		return result{outcome: killed, by: p, took: time.Since(start), out: out.String()}
	}
	return result{outcome: survived, by: "all tests pass", took: time.Since(start)}
}

func buildFailed(out []byte) bool {
	return bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]"))
}

// firstError is the compiler's first complaint, for the report.
func firstError(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, ".go:") {
			return strings.TrimSpace(l)
		}
	}
	return "see go test output"
}

// readEquivalent parses the equivalent-mutant list: an ID on a line of its
// own, then its reason on one or more indented lines. A missing file is an
// empty list.
func readEquivalent(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	id := ""
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
		case l[0] == ' ' || l[0] == '\t':
			if id == "" {
				return nil, fmt.Errorf("%s:%d: a reason without a mutant", path, i+1)
			}
			out[id] = strings.TrimSpace(out[id] + " " + strings.TrimSpace(l))
		default:
			if id != "" && out[id] == "" {
				return nil, fmt.Errorf("%s:%d: mutant %q has no reason", path, i, id)
			}
			id = strings.TrimSpace(l)
			if _, dup := out[id]; dup {
				return nil, fmt.Errorf("%s:%d: mutant listed twice: %s", path, i+1, id)
			}
			out[id] = ""
		}
	}
	if id != "" && out[id] == "" {
		return nil, fmt.Errorf("%s: mutant %q has no reason", path, id)
	}
	return out, nil
}

// execLimited caps the address space and replaces the process with args.
func execLimited(args []string) {
	lim := &syscall.Rlimit{Cur: testMemory, Max: testMemory}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, lim); err != nil {
		fmt.Fprintln(os.Stderr, "mutate: setrlimit:", err)
		os.Exit(2)
	}
	err := syscall.Exec(args[0], args, os.Environ())
	fmt.Fprintln(os.Stderr, "mutate: exec:", err)
	os.Exit(2)
}
