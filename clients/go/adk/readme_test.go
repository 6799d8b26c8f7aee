package adk

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Go README's programs run as written and print what it says, each its ```go block and
// the ```text block after it; the repository README's Go program prints what its comment says.
// They are run here, where ADK-Go's modules are, since one of them uses it.
func TestTheREADMEsProgramsRunAsWritten(t *testing.T) {
	newClient(t) // a server to run them against
	module := scratchModule(t)
	readme := read(t, "../README.md")
	programs := blocks(readme, "go")
	outputs := blocks(readme, "text")
	if len(programs) == 0 || len(programs) != len(outputs) {
		t.Fatalf("%d programs, %d outputs", len(programs), len(outputs))
	}
	for i, program := range programs {
		if printed := run(t, module, program); printed != outputs[i] {
			t.Errorf("program %d printed\n%s\nnot what the README says:\n%s", i+1, printed, outputs[i])
		}
	}
	root := blocks(read(t, "../../../README.md"), "go")
	if len(root) != 1 {
		t.Fatalf("the repository README has %d Go programs", len(root))
	}
	if printed := run(t, module, root[0]); printed != "1 user\n" {
		t.Errorf("the repository README's program printed %q", printed)
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

// run is what program prints, run by `go run` as the main package of module.
func run(t *testing.T, module, program string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(module, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	command := exec.Command("go", "run", ".")
	command.Dir = module
	printed, err := command.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, printed, program)
	}
	return string(printed)
}

// scratchModule is a module that requires both of these, as the README's Install makes one,
// with the ADK module's go.sum.
func scratchModule(t *testing.T) string {
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	requires, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mod := strings.Replace(string(requires), "module sessionary.local/sessionary/adk",
		"module readme", 1)
	mod = strings.Replace(mod, "=> ../", "=> "+filepath.Dir(here), 1)
	mod += "\nrequire sessionary.local/sessionary/adk v0.0.0\n\nreplace sessionary.local/sessionary/adk => " + here + "\n"
	sums, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	module := t.TempDir()
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sums} {
		if err := os.WriteFile(filepath.Join(module, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return module
}
