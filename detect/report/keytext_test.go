package report

import "testing"

func TestKeyText(t *testing.T) {
	for key, want := range map[string]string{
		"dXNlcjYyODQ3ODE4NjA2NjczNzcyMTE=": "user6284781860667377211", // a binary key of text
		"VVNFUiMx":                         "USER#1",
		"PHNjcmlwdD4=":                     "<script>", // text, escaped where it is shown
		"AAECAw==":                         "",         // bytes that are not text
		"G1sySg==":                         "",         // ESC[2J: a control character
		"/w==":                             "",         // not UTF-8
		"USER#123":                         "",         // not base64
		"customer":                         "",         // base64 of bytes that are not text
		"dXNlcg":                           "",         // unpadded
		"dXNlcg=":                          "",
		"":                                 "",
		// A key held as its first bytes, "…" and a hash.
		"PC9zY3JpcHQ+PHNjcmlwdD53aW5kb3cucHduZWQ9NTwvc2NyaXB0PjxpbWcgc3JjPXggb25lcnJvc…9569034ae1585f23": `</script><script>window.pwned=5</script><img src=x onerro…`,
		"AAECAw…9569034ae1585f23": "",
	} {
		if got := KeyText(key); got != want {
			t.Errorf("KeyText(%q) = %q, want %q", key, got, want)
		}
	}
}
