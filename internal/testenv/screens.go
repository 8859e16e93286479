package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// The README's screenshots (docs/img, taken by internal/cmd/screenshots)
// show the page as it opens. Beside them, ScreenshotManifest records the
// structure of the page each one shows (PageStructure), so that the page
// tests, which open the same views, can tell when the page no longer
// looks like its pictures: then they fail until the pictures are taken
// again (scripts/screenshots.sh), with the manifest.

// ScreenshotManifest is the manifest's path from the repository's root.
const ScreenshotManifest = "docs/img/screenshots.json"

// Screenshot is one picture of the manifest.
type Screenshot struct {
	// Image is the PNG's name in docs/img.
	Image string `json:"image"`
	// What says what it shows, and from what.
	What string `json:"what"`
	// View is the page's view when it was taken: "overview" or "table".
	View string `json:"view"`
	// Sections is the page's structure then (PageStructure).
	Sections []string `json:"sections"`
}

// PageStructure is a JavaScript expression that gives the structure of
// the live page or HTML report as it stands: its view, then its blocks
// from the top, one word each, a run of the same kind of block written
// once: a heading by its text ("h2 Diagnoses"), a diagnosis card
// ("diagnosis"), the no-diagnosis headline ("no diagnosis"), a table's
// card ("table", "table with axes" when its traffic chart draws them),
// another card ("card"); banners and links are left out.
const PageStructure = `(() => {
	const app = document.getElementById('app');
	const out = ['view ' + app.dataset.view];
	const kind = (el) => {
		if (el.tagName === 'H2') return 'h2 ' + el.textContent.trim();
		if (el.matches('article.diag')) return 'diagnosis';
		if (el.id === 'no-diagnoses') return 'no diagnosis';
		if (el.matches('ul.quiet-tables')) return 'quiet tables';
		if (el.matches('section.tbl')) {
			const over = el.querySelector('[data-chart^="traffic:"] .u-over');
			return over && over.offsetLeft > 20 ? 'table with axes' : 'table';
		}
		if (el.matches('section.card')) return 'card';
		return ''; // banners, links, the footer: not the page's structure
	};
	for (const el of app.querySelector('main').children) {
		const k = kind(el);
		if (k && out[out.length - 1] !== k) out.push(k);
	}
	return out;
})()`

// ReadScreenshots reads the manifest at path.
func ReadScreenshots(path string) ([]Screenshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var shots []Screenshot
	if err := json.Unmarshal(b, &shots); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return shots, nil
}

// MatchScreenshot returns an error unless the page's structure (from
// PageStructure) is the one image of the manifest at path shows.
func MatchScreenshot(path, image string, sections []string) error {
	shots, err := ReadScreenshots(path)
	if err != nil {
		return err
	}
	for _, s := range shots {
		if s.Image != image {
			continue
		}
		if !slices.Equal(s.Sections, sections) {
			return fmt.Errorf("the page is now %q, but docs/img/%s shows %q: take the screenshots again (scripts/screenshots.sh), which rewrites %s", sections, image, s.Sections, ScreenshotManifest)
		}
		return nil
	}
	return fmt.Errorf("%s lists no %s", path, image)
}
