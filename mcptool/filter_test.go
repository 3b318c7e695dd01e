package mcptool_test

import (
	"context"
	"slices"
	"testing"

	"github.com/miniopenclaw/tool/mcptool"
)

func TestServerToolFilter(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			srv := mcptool.NewServer(newRegistry(echo{}, add{}, words{}), mcptool.WithPageSize(1),
				mcptool.WithToolFilter(func(ctx context.Context, name string) bool { return name != "echo" }))
			defer srv.Close()
			cs := connectRaw(t, srv, era, nil)
			var names []string
			for tl, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tl.Name)
			}
			if !slices.Equal(names, []string{"add", "words"}) {
				t.Errorf("listed %v", names)
			}
		})
	}
}
