package adk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ADK-Go's own tests of its services are run against this module's in a module made at test
// time, in a temporary folder: with this module's requirements (its go.mod and go.sum), this
// module and the client beside them, and the files given. Each is read from where it is (the
// module cache, testdata), never copied into the repository.

// testModule makes that module, named path, and is go run in it (`go test` may fail: its
// -json output says how).
func testModule(t *testing.T, path string, files map[string][]byte) func(args ...string) []byte {
	t.Helper()
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	module := t.TempDir()
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(module, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := goIn(t, module)
	run("mod", "edit", "-module", path,
		"-require", "sessionary.local/sessionary/adk@v0.0.0",
		"-replace", "sessionary.local/sessionary/adk="+here,
		"-replace", "sessionary.local/sessionary="+filepath.Dir(here))
	return run
}

// goIn is the go tool run in dir, with this module's requirements as they are; what it
// printed.
func goIn(t *testing.T, dir string) func(args ...string) []byte {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if found, err := exec.LookPath("go"); err == nil {
		goTool = found
	}
	return func(args ...string) []byte {
		t.Helper()
		command := exec.Command(goTool, args...)
		command.Dir = dir
		command.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		var stderr bytes.Buffer
		command.Stderr = &stderr
		out, err := command.Output()
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && args[0] == "test" && stderr.Len() == 0) {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
}

// testResults reads `go test -json`: each test's result ("pass", "fail", "skip") and output.
func testResults(printed []byte) (results, output map[string]string) {
	results, output = map[string]string{}, map[string]string{}
	lines := bufio.NewScanner(bytes.NewReader(printed))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var event struct{ Action, Test, Output string }
		if json.Unmarshal(lines.Bytes(), &event) != nil || event.Test == "" {
			continue
		}
		switch event.Action {
		case "pass", "fail", "skip":
			results[event.Test] = event.Action
		case "output":
			output[event.Test] += event.Output
		}
	}
	return results, output
}
