package adk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Go README's programs run as written and print what it says, each its ```go block and
// the ```text block after it, twice, in a new module made and run by its Install steps, in
// their order; the repository README's Go program prints what its comment says. They are run here,
// where ADK-Go's modules are, since one of them uses it.
func TestTheREADMEsProgramsRunAsWritten(t *testing.T) {
	newClient(t) // a server to run them against
	readme := read(t, "../README.md")
	install := blocks(section(readme, "## Install"), "sh")
	if len(install) != 2 {
		t.Fatalf("the Install section has %d sh blocks, not 2: make the module, then run it", len(install))
	}
	module := installed(t, install[0])
	programs := blocks(readme, "go")
	outputs := blocks(readme, "text")
	if len(programs) == 0 || len(programs) != len(outputs) {
		t.Fatalf("%d programs, %d outputs", len(programs), len(outputs))
	}
	for i, program := range programs {
		for range 2 { // against the same server, as often as a reader may run them
			if printed := run(t, module, program, install[1]); printed != outputs[i] {
				t.Errorf("program %d printed\n%s\nnot what the README says:\n%s", i+1, printed, outputs[i])
			}
		}
	}
	root := blocks(read(t, "../../../README.md"), "go")
	if len(root) != 1 {
		t.Fatalf("the repository README has %d Go programs", len(root))
	}
	if printed := run(t, module, root[0], install[1]); printed != "1 user\n" {
		t.Errorf("the repository README's program printed %q", printed)
	}
}

// examples/go_agent runs as the README says, from the repository's root, and as its own
// comment says; twice in a row against the same server, each `go run` prints what its comment
// says.
func TestTheGoAgentRunsAsTheREADMESaysTwiceInARow(t *testing.T) {
	newClient(t)
	steps := blocks(section(read(t, "../README.md"), "## ADK-Go"), "sh")
	if len(steps) != 1 {
		t.Fatalf("the ADK-Go section has %d sh blocks, not 1", len(steps))
	}
	for _, line := range strings.Split(strings.TrimSpace(steps[0]), "\n") {
		if !strings.Contains(read(t, "../../../examples/go_agent/main.go"), "//\t"+line+"\n") {
			t.Errorf("examples/go_agent/main.go does not say %q", line)
		}
	}
	comments := regexp.MustCompile(`(?m)# (.*)$`).FindAllStringSubmatch(steps[0], -1)
	for range 2 {
		printed := shell(t, "../../..", steps[0])
		for _, comment := range comments {
			at := strings.Index(printed, comment[1]+"\n")
			if at < 0 {
				t.Fatalf("printed\n%s\nnot %q, then what the next comment says", printed, comment[1])
			}
			printed = printed[at+len(comment[1]):]
		}
	}
}

func read(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func blocks(markdown, language string) []string {
	var found []string
	for _, block := range regexp.MustCompile("(?s)```"+language+"\n(.*?)```").FindAllStringSubmatch(markdown, -1) {
		found = append(found, block[1])
	}
	return found
}

// section is the Markdown from heading to the next heading of its level.
func section(markdown, heading string) string {
	_, after, _ := strings.Cut(markdown, "\n"+heading+"\n")
	before, _, _ := strings.Cut(after, "\n## ")
	return before
}

// shell is what the lines print, run by `sh -e` in dir; they must succeed.
func shell(t *testing.T, dir, lines string) string {
	t.Helper()
	command := exec.Command("sh", "-e", "-c", lines)
	command.Dir = dir
	var stderr bytes.Buffer
	command.Stderr = &stderr
	printed, err := command.Output()
	if err != nil {
		t.Fatalf("%v\n%s%s\n%s", err, printed, stderr.String(), lines)
	}
	return string(printed)
}

// installed is the module that steps make, beside this checkout as their `git clone` would
// make it.
func installed(t *testing.T, steps string) string {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "sessionary")); err != nil {
		t.Fatal(err)
	}
	cloned := regexp.MustCompile(`(?m)^git clone .*\n`)
	if !cloned.MatchString(steps) {
		t.Fatalf("the Install steps clone no checkout:\n%s", steps)
	}
	shell(t, dir, cloned.ReplaceAllString(steps, ""))
	return filepath.Join(dir, "your-app")
}

// run is what program prints, as main.go of module, run by steps.
func run(t *testing.T, module, program, steps string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(module, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	return shell(t, module, steps)
}
