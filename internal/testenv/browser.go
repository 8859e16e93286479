package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumEnv names the environment variable that points at a Chromium (or
// Chrome) binary. Without it the tests look for Debian's chromium on the
// PATH, which `make test-deps` installs.
const ChromiumEnv = "HOTKEYD_CHROMIUM"

// ArtifactsEnv names the environment variable of the folder tests write
// what a person may want to look at afterwards (screenshots): one
// sub-folder per test. Without it they go under the user's temporary
// folder, hotkeyd-test-artifacts/; either way the test logs the path.
const ArtifactsEnv = "TEST_ARTIFACTS"

// browser is the test binary's one Chromium, started by the first Tab and
// stopped by CloseBrowser.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
	// shots lets one tab at a time be brought to the front and captured
	// (Screenshot), so that no other tab takes the front during a capture.
	shots sync.Mutex
}

// chromiumPath finds the browser: ChromiumEnv, else chromium (Debian),
// chromium-browser or google-chrome on the PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv(ChromiumEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", ChromiumEnv, p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium, chromium-browser or google-chrome on the PATH")
}

// StartBrowser starts a headless Chromium (HOTKEYD_CHROMIUM, else Debian's
// chromium on the PATH) with a 1280 × 900 window, and returns the context
// to open tabs from (chromedp.NewContext) and the function that stops it.
// Tests use NewTab; StartBrowser is for tools (scripts/screenshots.sh).
func StartBrowser() (context.Context, func(), error) {
	path, err := chromiumPath()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "hotkeyd-chromium-*")
	if err != nil {
		return nil, nil, err
	}
	// Headless, with nothing that talks to the network on its own: the
	// machines tests run on reach no host but their own.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
	}
	// Chromium refuses to start its sandbox as root, which is how CI runs
	// the tests.
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// Start the browser now. The first Run ties the browser's life to
	// the context it is given: bctx, not a shorter one.
	if err := chromedp.Run(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	return bctx, func() {
		cancelBrowser()
		cancelAlloc()
		os.RemoveAll(dir)
	}, nil
}

// CloseBrowser stops the test binary's browser if a test started one. Call
// it from TestMain once the tests have run (see WithBrowserClosed).
func CloseBrowser() {
	browser.once.Do(func() { browser.err = fmt.Errorf("browser closed") })
	if browser.cancel != nil {
		browser.cancel()
		browser.cancel = nil
	}
}

// WithBrowserClosed wraps a testing.M so that its Run stops the browser
// after the tests, before goleak looks for goroutines left behind:
//
//	goleak.VerifyTestMain(testenv.WithBrowserClosed(m))
func WithBrowserClosed(m interface{ Run() int }) interface{ Run() int } {
	return runThenClose{m}
}

type runThenClose struct{ m interface{ Run() int } }

func (r runThenClose) Run() int {
	code := r.m.Run()
	CloseBrowser()
	return code
}

// Tab is one browser tab of the test binary's headless Chromium (Debian's
// chromium, driven with chromedp). It records the page's console errors,
// uncaught exceptions and errors the browser logs, and the answers to the
// requests the page makes. It is closed when the test ends.
type Tab struct {
	// Ctx runs chromedp actions in the tab.
	Ctx context.Context

	mu       sync.Mutex
	errors   []string
	answers  []Answer
	pending  map[network.RequestID]*network.Response
	authUser string
	authPass string
}

// Answer is one HTTP answer the page received.
type Answer struct {
	URL    string
	Status int64
	Body   []byte
}

// maxAnswers bounds the answers a Tab keeps (the newest).
const maxAnswers = 400

// NewTab opens a tab. The browser is started with the first tab of the
// test binary and shared by the others (CloseBrowser stops it). When no
// Chromium is installed the test fails under CI (the CI environment
// variable is set) and is skipped with a message naming `make test-deps`
// otherwise.
func NewTab(t testing.TB) *Tab {
	t.Helper()
	browser.once.Do(func() { browser.ctx, browser.cancel, browser.err = StartBrowser() })
	if browser.err != nil {
		msg := fmt.Sprintf("Chromium is not available (%v): run `make test-deps` (or set %s)", browser.err, ChromiumEnv)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx)
	tab := &Tab{Ctx: ctx, pending: map[network.RequestID]*network.Response{}}
	t.Cleanup(cancel)
	chromedp.ListenTarget(ctx, tab.listen)
	if err := chromedp.Run(ctx, network.Enable(), runtime.Enable(), log.Enable()); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return tab
}

func (tab *Tab) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
			var parts []string
			for _, a := range ev.Args {
				if a.Value != nil {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			tab.addError("console." + string(ev.Type) + ": " + strings.Join(parts, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		tab.addError(fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.LevelError {
			tab.addError(fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventResponseReceived:
		tab.mu.Lock()
		tab.pending[ev.RequestID] = ev.Response
		tab.mu.Unlock()
	case *network.EventLoadingFinished:
		tab.mu.Lock()
		resp := tab.pending[ev.RequestID]
		delete(tab.pending, ev.RequestID)
		tab.mu.Unlock()
		if resp == nil || strings.HasPrefix(resp.URL, "data:") {
			return
		}
		// Not from the listener's goroutine: the body is asked of the
		// browser, whose answers that goroutine delivers.
		go func() {
			var body []byte
			_ = chromedp.Run(tab.Ctx, chromedp.ActionFunc(func(ctx context.Context) error {
				var err error
				body, err = network.GetResponseBody(ev.RequestID).Do(ctx)
				return err
			}))
			tab.mu.Lock()
			tab.answers = append(tab.answers, Answer{URL: resp.URL, Status: resp.Status, Body: body})
			if len(tab.answers) > maxAnswers {
				tab.answers = tab.answers[len(tab.answers)-maxAnswers:]
			}
			tab.mu.Unlock()
		}()
	case *network.EventLoadingFailed:
		tab.mu.Lock()
		delete(tab.pending, ev.RequestID)
		tab.mu.Unlock()
	case *fetch.EventAuthRequired:
		tab.mu.Lock()
		user, pass := tab.authUser, tab.authPass
		tab.mu.Unlock()
		go func() {
			_ = chromedp.Run(tab.Ctx, fetch.ContinueWithAuth(ev.RequestID, &fetch.AuthChallengeResponse{
				Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: user, Password: pass,
			}))
		}()
	case *fetch.EventRequestPaused:
		go func() { _ = chromedp.Run(tab.Ctx, fetch.ContinueRequest(ev.RequestID)) }()
	}
}

func (tab *Tab) addError(msg string) {
	tab.mu.Lock()
	tab.errors = append(tab.errors, msg)
	tab.mu.Unlock()
}

// Errors returns the console errors, uncaught exceptions and errors the
// browser logged (a failed load among them) since the tab opened or the
// last ClearErrors.
func (tab *Tab) Errors() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.errors...)
}

// ClearErrors forgets the errors recorded so far.
func (tab *Tab) ClearErrors() {
	tab.mu.Lock()
	tab.errors = nil
	tab.mu.Unlock()
}

// Answers returns the answers the page received whose URL matches re,
// oldest first (at most the newest 400 of all).
func (tab *Tab) Answers(re *regexp.Regexp) []Answer {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	var out []Answer
	for _, a := range tab.answers {
		if re == nil || re.MatchString(a.URL) {
			out = append(out, a)
		}
	}
	return out
}

// SignIn answers the next basic-auth challenge of a navigation with user
// and password, as a person typing them into the browser's dialog; the
// browser then keeps them for the origin, and the page's own requests
// carry them without help. Call it before Navigate.
func (tab *Tab) SignIn(t testing.TB, user, password string) {
	t.Helper()
	tab.mu.Lock()
	tab.authUser, tab.authPass = user, password
	tab.mu.Unlock()
	// Only documents (the navigation) are held for the challenge: the
	// page's own requests must carry the credentials the browser kept,
	// and none may be left held when SignedIn lets go.
	if err := chromedp.Run(tab.Ctx, fetch.Enable().WithHandleAuthRequests(true).
		WithPatterns([]*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest}})); err != nil {
		t.Fatalf("enable basic-auth answers: %v", err)
	}
}

// SignedIn stops answering challenges: from then on the page's requests
// carry the credentials the browser kept, or fail.
func (tab *Tab) SignedIn(t testing.TB) {
	t.Helper()
	if err := chromedp.Run(tab.Ctx, fetch.Disable()); err != nil {
		t.Fatalf("disable basic-auth answers: %v", err)
	}
}

// Run runs chromedp actions in the tab within timeout, failing the test on
// an error.
func (tab *Tab) Run(t testing.TB, timeout time.Duration, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, timeout)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("browser: %v\nerrors in the page: %v", err, tab.Errors())
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its JSON
// value into out.
func (tab *Tab) Eval(t testing.TB, expr string, out any) {
	t.Helper()
	var raw json.RawMessage
	tab.Run(t, browserPatience, chromedp.Evaluate("JSON.stringify("+expr+")", &raw))
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("evaluate %s: %v (%s)", expr, err, raw)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("evaluate %s: %v (%s)", expr, err, s)
	}
}

// Click clicks the first element the CSS selector finds, in one
// evaluation in the page, retried until the element is there or timeout.
// A live page re-renders its sections while a test works on it: a click by
// node (chromedp.Click) can find the node, then lose it to the next render
// ("Could not find node with given id"); a click made inside the page
// finds and clicks the element in one step.
func (tab *Tab) Click(t testing.TB, selector string, timeout time.Duration) {
	t.Helper()
	sel, err := json.Marshal(selector)
	if err != nil {
		t.Fatal(err)
	}
	tab.WaitFor(t, "(() => { const e = document.querySelector("+string(sel)+"); if (!e) return false; e.click(); return true; })()", timeout, "element to click "+selector)
}

// WaitFor polls a JavaScript expression until it is true, failing the test
// with what after timeout.
func (tab *Tab) WaitFor(t testing.TB, expr string, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		ctx, cancel := context.WithTimeout(tab.Ctx, 30*time.Second)
		err := chromedp.Run(ctx, chromedp.Evaluate("!!("+expr+")", &ok))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("browser: no %s within %s (last error %v)\nerrors in the page: %v", what, timeout, err, tab.Errors())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// browserPatience bounds one evaluation or screenshot: far above what any
// takes on an idle machine (a second or two for the largest report's
// screenshot), so that only a page that never answers fails, not a loaded
// machine (a full-page screenshot of a long report took over a minute with
// two test suites and a browser per package at once).
const browserPatience = 3 * time.Minute

// Screenshot writes a PNG of the whole page to name (e.g. "overview.png")
// in ArtifactDir and returns its path.
//
// The tab is brought to the front first, one tab of the browser at a
// time: headless Chromium can hold a capture of a tab in the background
// until a frame comes that never does. A screenshot is a picture for a
// person, not a check: when the capture still gives nothing within
// browserPatience but the page answers an evaluation, the browser's
// compositor failed, not the page, and the test logs the missing picture
// and goes on (the path returned is then empty). A page that does not
// answer either fails the test.
func (tab *Tab) Screenshot(t testing.TB, name string) string {
	t.Helper()
	png, err := tab.capture()
	if err != nil {
		ctx, cancel := context.WithTimeout(tab.Ctx, 30*time.Second)
		defer cancel()
		var answer int
		if perr := chromedp.Run(ctx, chromedp.Evaluate(`1 + 1`, &answer)); perr != nil || answer != 2 {
			t.Fatalf("browser: screenshot %s: %v, and the page does not answer (%v)\nerrors in the page: %v", name, err, perr, tab.Errors())
		}
		t.Logf("screenshot %s not taken: %v (the page answers: the browser gave no frame)", name, err)
		return ""
	}
	path := filepath.Join(ArtifactDir(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("write screenshot: %v", err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// capture brings the tab to the front and takes a PNG of its whole page,
// within browserPatience.
func (tab *Tab) capture() ([]byte, error) {
	browser.shots.Lock()
	defer browser.shots.Unlock()
	ctx, cancel := context.WithTimeout(tab.Ctx, browserPatience)
	defer cancel()
	var png []byte
	err := chromedp.Run(ctx, page.BringToFront(), chromedp.FullScreenshot(&png, 100))
	return png, err
}

// ArtifactDir returns the folder for what the test leaves for a person to
// look at: $TEST_ARTIFACTS/<test name>, or <temp>/hotkeyd-test-artifacts/<test
// name>-<process id> (two checkouts testing on one machine must not load
// each other's files); it outlives the test, and the test logs it.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	base := os.Getenv(ArtifactsEnv)
	if base == "" {
		base = filepath.Join(os.TempDir(), "hotkeyd-test-artifacts")
		name = fmt.Sprintf("%s-%d", name, os.Getpid())
	}
	dir := filepath.Join(base, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts folder: %v", err)
	}
	return dir
}
