package configs

import (
	"strings"
	"testing"
)

func TestWithHiddenScalesTheShape(t *testing.T) {
	c, _ := Load("tp8pp2")
	n, err := c.With("hidden", 2048)
	if err != nil {
		t.Fatal(err)
	}
	// 2048 / 128 = 16 heads (MHA: 16 KV heads); ffn keeps 16384/4096 = 4 × hidden = 8192.
	if n.Model.Hidden != 2048 || n.Model.Heads != 16 || n.Model.KVHeads != 16 || n.Model.FFN != 8192 {
		t.Fatalf("%+v", n.Model)
	}
	if c.Model.Hidden != 4096 {
		t.Fatal("With changed the original")
	}
	// 1000 is not a multiple of the head dim.
	if _, err := c.With("hidden", 1000); err == nil || !strings.Contains(err.Error(), "multiple of model.head_dim = 128") {
		t.Fatalf("error %v", err)
	}
	// 7 micro-batches do not divide 128 sequences.
	if _, err := c.With("microbatches", 7); err == nil || !strings.Contains(err.Error(), "parallel.microbatches") {
		t.Fatalf("error %v", err)
	}
	if _, err := c.With("color", 1); err == nil || !strings.Contains(err.Error(), "known: batch, context") {
		t.Fatalf("error %v", err)
	}
}
