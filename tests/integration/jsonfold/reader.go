// tests/integration/jsonfold/reader.go - how an upstream written in Go reads
// the fields a rule reads: each stdin line is a JSON body, decoded by
// encoding/json into a struct with the rule's fields; one output line per
// body: "<amount>\t<pay.sku>", "-" for absent, or "ERR" when Go refuses the body.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

type body struct {
	Amount *string `json:"amount"`
	Pay    *struct {
		Sku *string `json:"sku"`
	} `json:"pay"`
}

func show(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var b body
		if err := json.Unmarshal(in.Bytes(), &b); err != nil {
			fmt.Fprintln(out, "ERR")
			continue
		}
		sku := "-"
		if b.Pay != nil {
			sku = show(b.Pay.Sku)
		}
		fmt.Fprintf(out, "%s\t%s\n", show(b.Amount), sku)
	}
}
