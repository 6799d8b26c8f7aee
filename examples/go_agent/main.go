// An ADK-Go agent whose sessions live in Sessionary, with a scripted model (no Gemini key).
//
// Run it twice: the second run, a new process, resumes the session the first one started, its
// history and its `app:`, `user:` and session state. `-new` starts the session (go-demo, or the
// one a second argument names) anew, so that the two can be run again.
//
//	cd examples/go_agent
//	go run . -new Oslo   # remembered; I was given 3 messages
//	go run . Bergen      # remembered; I was given 7 messages
//
// Needs Go 1.25+ and a server (SESSIONARY_URL, else http://127.0.0.1:8000). Put a real model
// (gemini.NewModel from google.golang.org/adk/v2/model/gemini) in place of the script and
// nothing else changes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"iter"
	"log"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"sessionary.local/sessionary"
	"sessionary.local/sessionary/adk"
)

// scripted calls `remember` with the user's message, then says how much history it was given.
type scripted struct{}

func (scripted) Name() string { return "scripted" }

func (scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1].Parts[0]
		if last.FunctionResponse != nil {
			text := fmt.Sprintf("remembered; I was given %d messages", len(req.Contents))
			yield(&model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleModel)}, nil)
			return
		}
		call := genai.NewPartFromFunctionCall("remember", map[string]any{"city": last.Text})
		yield(&model.LLMResponse{Content: genai.NewContentFromParts([]*genai.Part{call}, genai.RoleModel)}, nil)
	}
}

type city struct {
	City string `json:"city"`
}

// remember keeps the city the user named in app, user and session state.
func remember(ctx agent.Context, args city) (map[string]string, error) {
	state := ctx.State()
	count, _ := state.Get("z")
	z, _ := count.(float64)
	for key, value := range map[string]any{"app:x": "written by the tool", "user:y": args.City, "z": z + 1} {
		if err := state.Set(key, value); err != nil {
			return nil, err
		}
	}
	return map[string]string{"remembered": args.City}, nil
}

func main() {
	anew := flag.Bool("new", false, "delete the session first, to start it anew")
	flag.Parse()
	if flag.NArg() < 1 {
		log.Fatal("usage: go run . [-new] CITY [SESSION_ID]")
	}
	sessionID := "go-demo"
	if flag.NArg() > 1 {
		sessionID = flag.Arg(1)
	}
	if err := turn(context.Background(), flag.Arg(0), sessionID, *anew); err != nil {
		log.Fatal(err)
	}
}

func turn(ctx context.Context, cityName, sessionID string, anew bool) error {
	client, err := sessionary.New(sessionary.Options{}) // SESSIONARY_URL, SESSIONARY_API_KEY
	if err != nil {
		return err
	}
	rememberTool, err := functiontool.New(functiontool.Config{Name: "remember",
		Description: "Remember the city the user named."}, remember)
	if err != nil {
		return err
	}
	weather, err := llmagent.New(llmagent.Config{Name: "weather_agent", Model: scripted{},
		Instruction: "Remember the cities the user names.", Tools: []tool.Tool{rememberTool}})
	if err != nil {
		return err
	}
	service := adk.NewService(client)
	if anew {
		err := service.Delete(ctx, &session.DeleteRequest{AppName: "examples", UserID: "ada", SessionID: sessionID})
		if err != nil {
			return err
		}
	}
	r, err := runner.New(runner.Config{AppName: "examples", Agent: weather, SessionService: service,
		AutoCreateSession: true})
	if err != nil {
		return err
	}
	message := genai.NewContentFromText(cityName, genai.RoleUser)
	for event, err := range r.Run(ctx, "ada", sessionID, message, agent.RunConfig{}) {
		if err != nil {
			return err
		}
		if event.IsFinalResponse() && event.Content != nil {
			fmt.Println(event.Content.Parts[0].Text)
		}
	}
	got, err := service.Get(ctx, &session.GetRequest{AppName: "examples", UserID: "ada", SessionID: sessionID})
	if err != nil {
		return err
	}
	state := map[string]any{}
	for key, value := range got.Session.State().All() {
		state[key] = value
	}
	shown, err := json.Marshal(state) // keys sorted
	fmt.Println(string(shown))
	return err
}
