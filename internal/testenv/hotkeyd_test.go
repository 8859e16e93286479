package testenv

import "testing"

func TestHotkeydAddressFromLog(t *testing.T) {
	for line, want := range map[string]string{
		`ts=2026-11-23T09:36:01.292Z level=info msg="hotkeyd started" address=127.0.0.1:40435 window=10s`:                 "127.0.0.1:40435",
		`{"level":"info","ts":"2026-11-23T09:36:01.292Z","msg":"hotkeyd started","address":"[::1]:9529","window":"1m0s"}`: "[::1]:9529",
		`ts=2026-11-23T09:36:01.293Z level=info logger=web msg="Listening on" address=127.0.0.1:40435`:                    "",
	} {
		got := ""
		if m := hkAddressRE.FindStringSubmatch(line); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("address in %s = %q, want %q", line, got, want)
		}
	}
}

func TestHotkeydHasFlag(t *testing.T) {
	args := []string{"demo", "--web.listen-address=:0", "--log.level", "debug"}
	if !hkHasFlag(args, "--web.listen-address") || !hkHasFlag(args, "--log.level") || hkHasFlag(args, "--web.config.file") {
		t.Errorf("hkHasFlag(%q) wrong", args)
	}
}
