package workspace

import (
	"context"
	"errors"

	"github.com/miniopenclaw/tool"
)

// ExecArgs are exec's arguments.
type ExecArgs struct {
	Argv  []string `json:"argv,omitempty" maxItems:"1024" description:"The command and its arguments, such as [\"ls\", \"-la\"]. No shell is involved: quotes, globs and ; are passed as they are."`
	Shell string   `json:"shell,omitempty" maxLength:"65536" description:"A shell command line, run with sh -c. Only accepted when the workspace allows a shell; give argv otherwise."`
}

func (ts *Toolset) execTool() tool.Tool {
	desc := "Runs a command in the workspace, inside a sandbox with no network, and returns its output and how it ended. Give argv (the command and its arguments)."
	if ts.policy.AllowShell {
		desc += " Or give shell, a command line for sh -c."
	}
	return tool.Must(tool.New("exec", desc,
		func(ctx context.Context, in ExecArgs) (tool.Result, error) {
			argv := in.Argv
			switch {
			case in.Shell != "" && len(argv) > 0:
				return tool.Result{}, errors.New("give argv or shell, not both")
			case in.Shell != "":
				if !ts.policy.AllowShell {
					return tool.Result{}, errors.New("shell command lines are not allowed here; give argv, the command and its arguments")
				}
				argv = []string{"/bin/sh", "-c", in.Shell}
			case len(argv) == 0 || argv[0] == "":
				return tool.Result{}, errors.New("argv is empty; give the command and its arguments")
			}
			r, err := ts.backend.Run(ctx, ts.policy, argv, nil)
			if err != nil {
				return tool.Result{}, err
			}
			layers := make([]string, len(r.Layers))
			for i, l := range r.Layers {
				layers[i] = string(l)
			}
			// Package oteltool records these on the call's span as
			// sandbox.layers, sandbox.outcome, sandbox.exit_code and
			// sandbox.mode.
			res := tool.Result{
				Output: r.Text(),
				Metadata: map[string]any{
					"outcome":        string(r.Outcome),
					"exit_code":      r.ExitCode,
					"sandbox_layers": layers,
					"duration_ms":    r.Duration.Milliseconds(),
				},
			}
			if r.Mode != "" {
				res.Metadata["sandbox_mode"] = string(r.Mode)
			}
			if r.Fallback != "" {
				res.Metadata["sandbox_fallback"] = r.Fallback
			}
			if r.Cgroup != "" {
				res.Metadata["sandbox_cgroup"] = r.Cgroup
			}
			if len(r.ProtectedChanged) > 0 {
				res.Metadata["protected_changed"] = r.ProtectedChanged
			}
			if len(r.NotApplied) > 0 {
				res.Metadata["not_applied"] = r.NotApplied
			}
			if len(r.NetworkDenials) > 0 {
				res.Metadata["network_denials"] = r.NetworkDenials
			}
			if !r.OK() {
				res.IsError = true
				res.Kind = tool.KindToolError
				res.Error = r.Text()
				res.Output = ""
			}
			return res, nil
		}, tool.WithAnnotations(tool.Annotations{Title: "Run command", Destructive: true})))
}
