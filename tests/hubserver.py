"""A small HTTP server on 127.0.0.1 that speaks the Hugging Face Hub's protocol.

It implements the endpoints that ``huggingface_hub`` itself calls for a dataset repo, so
the tests exercise the real client (no mocks): repo creation, branches, preupload and
NDJSON commits (regular, base64-inlined files), ``repo_info``, ``list_repo_tree`` (what
``snapshot_download`` lists a commit with), and ``resolve`` with
HEAD/GET, ``X-Repo-Commit``, ``ETag``/``X-Linked-Etag``, ``Content-Length`` and
``Range`` (206) so that interrupted downloads resume. Errors carry ``X-Error-Code`` the
way the Hub does, so the client raises its own typed errors.

Faults for the tests: ``server.faults[path] = "drop"`` cuts the next GET of that file
(``"500"`` answers it with a server error, ``"slow"`` trickles it at 2 KB/s)
half-way (the client retries); ``"500"`` fails the next GET; ``server.tamper(...)``
rewrites a file in place in the newest commit (a corrupted upload).
"""

from __future__ import annotations

import base64
import hashlib
import time
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import yaml


@dataclass
class Repo:
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> {path: content}
    branches: dict[str, str] = field(default_factory=dict)  # name -> sha


class HubServer:
    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.log: list[tuple[str, str, dict[str, str]]] = []
        self.faults: dict[str, str] = {}
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "HubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- helpers for tests -----------------------------------------------------------------
    def resolve_rev(self, repo_id: str, rev: str) -> str | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return None
        if rev in repo.branches:
            return repo.branches[rev]
        return rev if rev in repo.commits else None

    def commit(self, repo_id: str, branch: str, changes: dict[str, bytes | None]) -> str:
        with self.lock:
            repo = self.repos[repo_id]
            parent = repo.branches.get(branch)
            files = dict(repo.commits[parent]) if parent else {}
            for path, content in changes.items():
                if content is None:
                    files.pop(path, None)
                else:
                    files[path] = content
            h = hashlib.sha1(json.dumps([parent, sorted((p, hashlib.sha256(c).hexdigest()) for p, c in files.items())]).encode())
            sha = h.hexdigest()
            repo.commits[sha] = files
            repo.branches[branch] = sha
            return sha

    def tamper(self, repo_id: str, path: str, content: bytes, branch: str = "main") -> str:
        """Replace a file's content in place in the branch head (a corrupted upload)."""
        with self.lock:
            sha = self.repos[repo_id].branches[branch]
            self.repos[repo_id].commits[sha][path] = content
            return sha


def _handler(server: HubServer) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        # -- plumbing ---------------------------------------------------------------------
        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _json(self, code: int, obj: object, headers: dict[str, str] | None = None) -> None:
            self._send(code, json.dumps(obj).encode(), {"Content-Type": "application/json", **(headers or {})})

        def _error(self, code: int, error_code: str, msg: str, head: bool = False) -> None:
            body = json.dumps({"error": msg}).encode()
            self._send(code, body, {"Content-Type": "application/json", "X-Error-Code": error_code, "X-Error-Message": msg}, head=head)

        def _record(self) -> str:
            path = unquote(urlsplit(self.path).path)
            server.log.append((self.command, path, {k.lower(): v for k, v in self.headers.items()}))
            return path

        # -- verbs -------------------------------------------------------------------------
        def do_HEAD(self) -> None:
            self._resolve(self._record(), head=True)

        def do_GET(self) -> None:
            path = self._record()
            if path.startswith("/api/datasets/") and "/revision/" in path:
                repo_id, rev = path[len("/api/datasets/"):].split("/revision/", 1)
                sha = server.resolve_rev(repo_id, rev)
                if repo_id not in server.repos:
                    return self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
                if sha is None:
                    return self._error(404, "RevisionNotFound", f"Revision {rev} not found")
                files = server.repos[repo_id].commits[sha]
                return self._json(200, {"id": repo_id, "sha": sha, "private": False, "siblings": [{"rfilename": p} for p in sorted(files)]})
            if path.startswith("/api/datasets/") and "/tree/" in path:
                return self._tree(path)
            self._resolve(path, head=False)

        def _tree(self, path: str) -> None:
            # list_repo_tree (snapshot_download lists a commit with it): one page, files as the Hub
            # describes a regular (non-LFS) file - oid is the git blob sha1 of the content
            repo_id, rest = path[len("/api/datasets/"):].split("/tree/", 1)
            rev, _, prefix = rest.partition("/")
            if repo_id not in server.repos:
                return self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
            sha = server.resolve_rev(repo_id, rev)
            if sha is None:
                return self._error(404, "RevisionNotFound", f"Revision {rev} not found")
            recursive = parse_qs(urlsplit(self.path).query).get("recursive", ["False"])[0].lower() == "true"
            base = prefix.strip("/") + "/" if prefix.strip("/") else ""
            entries, dirs = [], set()
            for p, content in sorted(server.repos[repo_id].commits[sha].items()):
                if not p.startswith(base):
                    continue
                parts = p[len(base):].split("/")
                # the folders between base and the file: all of them when recursive, else the first
                dirs.update(base + "/".join(parts[:i]) for i in range(1, len(parts) if recursive else min(2, len(parts))))
                if len(parts) > 1 and not recursive:
                    continue
                blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
                entries.append({"type": "file", "oid": blob, "size": len(content), "path": p})
            folders = [{"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "path": d, "size": 0} for d in sorted(dirs)]
            return self._json(200, folders + entries)

        def do_POST(self) -> None:
            path = self._record()
            body = self._body()
            if path == "/api/repos/create":
                req = json.loads(body)
                repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
                url = f"{server.url}/datasets/{repo_id}"
                with server.lock:
                    if repo_id in server.repos:
                        return self._json(409, {"error": "You already created this dataset repo", "url": url})
                    server.repos[repo_id] = Repo()
                server.commit(repo_id, "main", {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"})
                return self._json(200, {"url": url, "name": repo_id})
            if path == "/api/validate-yaml":
                # the Hub parses the card's YAML header; do the same and report errors as it does
                content = json.loads(body)["content"]
                parts = content.split("---")
                try:
                    meta = yaml.safe_load(parts[1]) if content.startswith("---") and len(parts) > 2 else None
                    if not isinstance(meta, dict):
                        raise ValueError("empty or missing YAML metadata")
                    if not isinstance(meta.get("configs", []), list):
                        raise ValueError("configs must be a list")
                except (yaml.YAMLError, ValueError) as e:
                    return self._json(400, {"errors": [{"message": str(e)}]}, {"X-Error-Code": "BadRequest"})
                return self._json(200, {"errors": [], "warnings": []})
            if not path.startswith("/api/datasets/"):
                return self._error(404, "EntryNotFound", f"no route {path}")
            rest = path[len("/api/datasets/"):]
            for verb in ("/preupload/", "/commit/", "/branch/"):
                if verb in rest:
                    repo_id, rev = rest.split(verb, 1)
                    break
            else:
                return self._error(404, "EntryNotFound", f"no route {path}")
            if repo_id not in server.repos:
                return self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
            if verb == "/preupload/":
                files = json.loads(body)["files"]
                return self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None} for f in files]})
            if verb == "/branch/":
                with server.lock:
                    repo = server.repos[repo_id]
                    if rev in repo.branches:
                        return self._error(409, "BranchExists", f"Branch {rev} already exists")
                    repo.branches[rev] = repo.branches["main"]
                return self._json(200, {})
            # commit: NDJSON, one header line then one line per operation
            if server.resolve_rev(repo_id, rev) is None:
                return self._error(404, "RevisionNotFound", f"Revision {rev} not found")
            changes: dict[str, bytes | None] = {}
            for line in body.splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    changes[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                elif item["key"] in ("deletedFile",):
                    changes[item["value"]["path"]] = None
                elif item["key"] != "header":
                    return self._error(400, "BadRequest", f"unsupported commit operation {item['key']}")
            sha = server.commit(repo_id, rev, changes)
            return self._json(200, {"commitUrl": f"{server.url}/datasets/{repo_id}/commit/{sha}", "commitOid": sha, "success": True})

        def _resolve(self, path: str, head: bool) -> None:
            if not path.startswith("/datasets/") or "/resolve/" not in path:
                return self._error(404, "EntryNotFound", f"no route {path}", head)
            repo_id, rest = path[len("/datasets/"):].split("/resolve/", 1)
            rev, _, fpath = rest.partition("/")
            if repo_id not in server.repos:
                return self._error(404, "RepoNotFound", f"Repository {repo_id} not found", head)
            sha = server.resolve_rev(repo_id, rev)
            if sha is None:
                return self._error(404, "RevisionNotFound", f"Revision {rev} not found", head)
            content = server.repos[repo_id].commits[sha].get(fpath)
            if content is None:
                return self._send(404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": sha}, head)
            etag = f'"{hashlib.sha256(content).hexdigest()}"'
            base = {"X-Repo-Commit": sha, "ETag": etag, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
            rng = self.headers.get("Range")
            if head:
                return self._send(200, content, base, head=True)
            if rng and rng.startswith("bytes="):
                start_s, _, end_s = rng[len("bytes="):].partition("-")
                start = int(start_s)
                end = int(end_s) if end_s else len(content) - 1
                part = content[start:end + 1]
                return self._send(206, part, {**base, "Content-Range": f"bytes {start}-{end}/{len(content)}"})
            fault = server.faults.pop(fpath, None)
            if fault == "500":
                return self._error(500, "InternalError", "the server fell over")
            if fault == "slow":  # a trickle: 2 KB/s, the whole length promised
                self.send_response(200)
                for k, v in base.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                try:
                    for i in range(0, len(content), 2048):
                        self.wfile.write(content[i:i + 2048])
                        self.wfile.flush()
                        time.sleep(1.0)
                except OSError:
                    pass
                return
            if fault == "drop":
                # promise the whole file, send half, hang up: a dropped connection
                self.send_response(200)
                for k, v in base.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content[: len(content) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            return self._send(200, content, base)

    return H
