package sessionary

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The client has what the spec names, as spec_gen.go lists it (clients/generate.py): for each
// operation the method methodOf names, and for each problem code a kind that an answer with
// that code matches. Since Go's kinds are generated, the spec's codes are read here too: a
// code the spec gained after spec_gen.go was written is one the client lacks.

func TestEveryOperationOfTheSpecHasAMethod(t *testing.T) {
	client := reflect.TypeOf(&Client{})
	for _, operation := range specOperations {
		name, ok := methodOf[operation.id]
		if !ok {
			t.Errorf("%s %s (%s): methodOf names no method", operation.method, operation.path, operation.id)
		} else if _, ok := client.MethodByName(name); !ok {
			t.Errorf("%s: the client has no method %s", operation.id, name)
		}
	}
}

func TestEveryProblemCodeIsItsKind(t *testing.T) {
	var problemCode struct{ Enum []string }
	if err := json.Unmarshal(readSpec(t).Components.Schemas["Problem"].Properties["code"], &problemCode); err != nil {
		t.Fatal(err)
	}
	for _, code := range problemCode.Enum {
		if problemKinds[code] == nil {
			t.Errorf("%s: no kind (run `make clients`)", code)
		}
	}
	for code, kind := range problemKinds {
		// 418: a status no kind matches whatever the code
		answer := &APIError{Status: 418, Problem: Problem{Code: code}}
		if !errors.Is(answer, kind) || kind.(*errorKind).code != code {
			t.Errorf("%s: its kind is %v", code, kind)
		}
	}
}
