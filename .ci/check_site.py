"""Check the built docs site in a real headless browser (Debian's Chromium).

    python .ci/check_site.py [site/]

Serves the site on 127.0.0.1, renders the home page and the API page with
``chromium --headless --dump-dom`` and checks that their content rendered, then follows
every internal link of every page and checks that it resolves (file and anchor).
Exit 0 when all is well; 1 with the list of problems; 3 when no Chromium is installed.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

PAGES = {"index.html": ["nasbench-bert", "Errata"], "api/index.html": ["Benchmark", "query", "NotEvaluatedError"]}


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "a" and a.get("href"):
            self.links.append(a["href"] or "")
        if tag in ("link", "script", "img") and (a.get("href") or a.get("src")):
            self.links.append(a.get("href") or a.get("src") or "")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def render(browser: str, url: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", url],
                           capture_output=True, text=True, timeout=120)
    return r.stdout


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "site").resolve()
    browser = chromium()
    if browser is None:
        print("no chromium found; install Debian's chromium to run this check")
        return 3
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    problems: list[str] = []
    try:
        for page, words in PAGES.items():
            dom = render(browser, base + page)
            missing = [w for w in words if w not in dom]
            print(f"rendered {page}: {len(dom):,} characters of DOM" + (f", missing {missing}" if missing else ""))
            if len(dom) < 2000 or missing:
                problems.append(f"{page} did not render its content (missing {missing})")
    finally:
        server.shutdown()
    pages = sorted(site.rglob("*.html"))
    ids: dict[Path, set[str]] = {}
    parsed: dict[Path, _Links] = {}
    for p in pages:
        parsed[p] = _Links()
        parsed[p].feed(p.read_text(errors="replace"))
        ids[p] = parsed[p].ids
    checked = 0
    for p in pages:
        rel = "/" + p.relative_to(site).as_posix()
        for link in parsed[p].links:
            u = urlparse(link)
            if u.scheme or link.startswith(("mailto:", "//", "data:", "javascript:")):
                continue
            target_url, frag = urldefrag(urljoin(rel, link))
            target = site / unquote(target_url).lstrip("/")
            if target.is_dir() or target_url.endswith("/"):
                target = target / "index.html"
            checked += 1
            if not target.exists():
                problems.append(f"{rel}: broken link {link!r}")
            elif frag and target.suffix == ".html" and frag not in ids.get(target, set()):
                problems.append(f"{rel}: link {link!r} names a missing anchor")
    print(f"checked {checked} internal links on {len(pages)} pages")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
