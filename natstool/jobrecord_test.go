package natstool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go/jetstream"
)

// TestForgedJobRecordRefused is an attack on the jobs' bucket: a job's
// record is a plain key-value entry, and Wait and Job took whatever it
// held, so anyone who may write to the bucket (and read the record's
// owner digest there) finished another principal's job with a result of
// their own. With a ReplyKey, every record the jobs write is signed,
// bound to its job's id, and a record that is not (or is signed for
// another job) is refused: Wait and Job fail saying so, and a worker
// does not run a job whose record is forged. The control is the same
// attack without a key, where Wait returns the forged result.
func TestForgedJobRecordRefused(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		name := map[bool]string{false: "no key (control)", true: "keyed"}[keyed]
		t.Run(name, func(t *testing.T) {
			s := startServer(t, true)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			jo := &natstool.JobsOptions{Logger: quiet}
			if keyed {
				jo.ReplyKey = testReplyKey(t)
			}
			jobs, err := natstool.OpenJobs(ctx, connect(t, s), jo)
			if err != nil {
				t.Fatal(err)
			}
			id, err := jobs.Submit(ctx, "hold", nil, nil) // no worker: it stays queued
			if err != nil {
				t.Fatal(err)
			}
			other, err := jobs.Submit(ctx, "hold", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			js, err := jetstream.New(connect(t, s))
			if err != nil {
				t.Fatal(err)
			}
			kv, err := js.KeyValue(ctx, natstool.DefaultJobBucket)
			if err != nil {
				t.Fatal(err)
			}
			e, err := kv.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var job natstool.Job
			if err := json.Unmarshal(e.Value(), &job); err != nil {
				t.Fatal(err)
			}
			job.State, job.Result = natstool.JobDone, &tool.Result{Output: "forged"}
			forged, _ := json.Marshal(job)
			if _, err := kv.Put(ctx, id, forged); err != nil {
				t.Fatal(err)
			}
			res, err := jobs.Wait(ctx, id)
			if !keyed {
				if err != nil || res.Output != "forged" {
					t.Fatalf("without a key the forged record was not taken (%+v, %v): the control shows nothing", res, err)
				}
				return
			}
			if err == nil || !errors.Is(err, natstool.ErrReplySignature) || res.Output == "forged" {
				t.Fatalf("Wait on a forged record: %+v, %v", res, err)
			}
			if _, err := jobs.Job(ctx, id); !errors.Is(err, natstool.ErrReplySignature) {
				t.Errorf("Job on a forged record: %v", err)
			}
			// Another job's genuine signed record, copied onto this one.
			o, err := kv.Get(ctx, other)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Put(ctx, id, o.Value()); err != nil {
				t.Fatal(err)
			}
			if _, err := jobs.Job(ctx, id); !errors.Is(err, natstool.ErrReplySignature) {
				t.Errorf("Job on another job's record: %v", err)
			}
			if _, err := jobs.Job(ctx, other); err != nil {
				t.Errorf("Job on a genuine record: %v", err)
			}
		})
	}
}
