#!/usr/bin/env python3
"""Checks the documentation against the repository and the command.

Usage: scripts/docs-check.py [GGUFRW_BINARY]
       (default: $GGUFRW_BIN, else target/release/ggufrw)

Files: README.md, CONTRIBUTING.md, ARCHITECTURE.md and docs/*.md (CHANGELOG.md is history and
is left as it was written). For each:

- every relative link, `[text](path)` or `[text](path#anchor)`, names a file or folder of the
  repository, and its anchor a heading of the Markdown file it points to (GitHub's slugs);
- every repository path in a code span exists: a word that contains a `/` and starts with a
  top-level entry of the repository (`src/...`, `tests/...`), or that ends in .rs, .sh, .py,
  .md or .toml (a bare name must exist somewhere in the repository, a partial path such as
  `k/search.rs` as the end of a path). URLs, `~/...`, absolute paths, placeholders (`<...>`,
  `…`, `$VAR`, `{a,b}` is expanded), build outputs (`target/`, `fuzz/corpus/`...) and the
  files of other projects listed in EXTERNAL are not looked for;
- every `ggufrw COMMAND ...` in a code span or a shell code block (and every code span that
  starts with a command's name and holds a flag, such as `edit --in-place`) names a real
  command, and every flag after it on that command line is one the command's `--help` lists.
  Flags after `--` in `convert-hf` are llama-quantize's, checked against `ggufrw quantize`;
  `conform --peer-command` takes the rest of the line as the adapter's.

Each failure is printed as `file:line: what`; the exit status is 1 when there is any.
Python 3 standard library only.
"""
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTENSIONS = (".rs", ".sh", ".py", ".md", ".toml")
# Files of other projects the docs name (llama.cpp's tree, gguf-py's package).
EXTERNAL = {
    "convert_hf_to_gguf.py",
    "convert_lora_to_gguf.py",
    "convert_legacy_llama.py",
    "convert_llama_ggml_to_gguf.py",
    "constants.py",
    "tensor_mapping.py",
    "base.py",
}
EXTERNAL_PREFIXES = ("gguf-py/", "conversion/", "requirements/", "vendor/", "ggml/")
# Made by builds and runs, not in a clone.
GENERATED_PREFIXES = ("target/", "fuzz/target/", "fuzz/corpus/", "fuzz/artifacts/")
SHELL_LANGUAGES = {"", "sh", "bash", "shell", "console", "text"}
SEPARATORS = {"|", "||", "&&", ";", "&"}


def markdown_files():
    names = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"]
    files = [n for n in names if os.path.exists(os.path.join(ROOT, n))]
    docs = os.path.join(ROOT, "docs")
    if os.path.isdir(docs):
        files += sorted(
            os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md")
        )
    return files


def repository_files():
    """Every file and folder of the work tree (relative paths), outside .git and target."""
    paths = set()
    for top, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(top, ROOT)
        dirs[:] = [
            d
            for d in dirs
            if d not in (".git", "target", "node_modules", "__pycache__")
            and not (rel == "fuzz" and d in ("corpus", "artifacts"))
        ]
        for name in dirs + files:
            paths.add(os.path.normpath(os.path.join(rel, name)))
    return paths


PATHS = repository_files()
TOP = {p for p in PATHS if os.sep not in p}
BASENAMES = {os.path.basename(p) for p in PATHS}


# --- Markdown ---------------------------------------------------------------------------------


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    out = set()
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if re.match(r"^\s*(```|~~~)", line):
                in_code = not in_code
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m and not in_code:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
    return out


def parse(path):
    """Yields ('block', lang, [(line, text)]) and ('para', [(line, text)]) items."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    para = []
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^\s*(```+|~~~+)\s*([\w+-]*)", line)
        if fence:
            if para:
                yield ("para", para)
                para = []
            marker, lang = fence.group(1), fence.group(2).lower()
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append((i + 1, lines[i]))
                i += 1
            yield ("block", lang, body)
            i += 1
            continue
        if line.strip() == "":
            if para:
                yield ("para", para)
                para = []
        else:
            para.append((i + 1, line))
        i += 1
    if para:
        yield ("para", para)


def spans_and_links(para):
    """Code spans and links of a paragraph, each with its line number."""
    text = ""
    starts = []  # (offset, line)
    for line, t in para:
        starts.append((len(text), line))
        text += t + "\n"

    def line_at(offset):
        found = starts[0][1]
        for off, line in starts:
            if off <= offset:
                found = line
        return found

    spans = []
    masked = list(text)
    for m in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", text, re.S):
        spans.append((line_at(m.start()), m.group(2).strip().replace("\n", " ")))
        for k in range(m.start(), m.end()):
            if masked[k] != "\n":
                masked[k] = " "
    masked = "".join(masked)
    links = []
    for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", masked):
        links.append((line_at(m.start()), m.group(1)))
    for m in re.finditer(r"^\s*\[[^\]]+\]:\s*(\S+)", masked, re.M):
        links.append((line_at(m.start()), m.group(1)))
    return spans, links


# --- paths ------------------------------------------------------------------------------------


def expand_braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(word[: m.start()] + alt + word[m.end() :])
    return out


def path_exists(word, doc_dir):
    word = word.rstrip("/")
    if not word:
        return True
    candidates = [
        os.path.normpath(word),
        os.path.normpath(os.path.join(doc_dir, word)),
    ]
    if any(c in PATHS for c in candidates):
        return True
    if "*" in word or "?" in word:
        pattern = re.compile(
            "^" + re.escape(word).replace(r"\*", "[^/]*").replace(r"\?", "[^/]") + "$"
        )
        names = PATHS if "/" in word else BASENAMES
        return any(pattern.match(n) for n in names)
    if "/" not in word:
        return word in BASENAMES
    # a partial path, as ARCHITECTURE.md names files inside a crate: the end of a path
    return any(p.endswith(os.sep + os.path.normpath(word)) for p in PATHS)


def path_words(span):
    """The words of a code span that are meant as repository paths."""
    out = []
    for raw in span.split():
        word = raw.strip("()[],;:'\"")
        word = re.sub(r":\d+$", "", word)  # file.rs:12
        if not word or "://" in word or word.startswith(("~", "/", "-", "$", ".")):
            continue
        if any(c in word for c in "<>…$=@|\\") or word.endswith("::"):
            continue
        if "::" in word:
            continue
        looks = word.endswith(EXTENSIONS) or (
            "/" in word and word.split("/")[0] in TOP
        )
        if not looks:
            continue
        if word in EXTERNAL or word.startswith(EXTERNAL_PREFIXES):
            continue
        if word.startswith(GENERATED_PREFIXES) or word.rstrip("/") == "target":
            continue
        stem = word.rstrip("/").split("/")[-1].split(".")[0]
        if stem.isupper() and stem not in ("README", "LICENSE", "CHANGELOG", "CONTRIBUTING"):
            continue  # a placeholder: OUT.toml, CRATE.txt
        out.append(word)
    return out


# --- the command ------------------------------------------------------------------------------


class Command:
    def __init__(self, binary):
        self.binary = binary
        self.helps = {}
        top = self.help([])
        self.commands = self.subcommands(top)
        self.top_flags = self.flags(top)

    def help(self, words):
        key = tuple(words)
        if key not in self.helps:
            p = subprocess.run(
                [self.binary, *words, "--help"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            self.helps[key] = p.stdout
        return self.helps[key]

    @staticmethod
    def subcommands(text):
        m = re.search(r"^Commands:\n((?:  .*\n?)*)", text, re.M)
        if not m:
            return set()
        return {
            l.split()[0]
            for l in m.group(1).split("\n")
            if l.strip() and re.match(r"^  \S", l)
        }

    @staticmethod
    def flags(text):
        """The flags a --help text defines: its option lines and its usage lines."""
        found = set()
        for line in text.split("\n"):
            m = re.match(r"^\s+(-[A-Za-z0-9])?(?:,\s*)?(--[A-Za-z0-9][\w-]*)?", line)
            if m and (m.group(1) or m.group(2)):
                found.update(g for g in m.groups() if g)
        usage = re.search(r"^[Uu]sage:.*?(?:\n\s*\n|\Z)", text, re.M | re.S)
        if usage:
            found.update(re.findall(r"(?<![\w-])(--[A-Za-z0-9][\w-]*|-[A-Za-z])\b", usage.group(0)))
        for line in text.split("\n"):
            if re.match(r"^\s+ggufrw \S+ --", line):
                found.update(re.findall(r"(?<![\w-])(--[A-Za-z0-9][\w-]*)", line))
        found.update({"-h", "--help"})
        return found

    def check(self, words):
        """Failures of one command line: words after `ggufrw`."""
        if not words:
            return []
        first = words[0]
        if first.startswith("-"):
            return [
                f"`ggufrw {w}`: not an option of ggufrw"
                for w in flag_words(words)
                if w not in self.top_flags
            ][:1]
        if not re.fullmatch(r"[a-z][a-z0-9-]*", first):
            return []  # a placeholder: COMMAND, <command>
        if first not in self.commands:
            return [f"`ggufrw {first}`: no such command (commands: {', '.join(sorted(self.commands))})"]
        path = [first]
        text = self.help(path)
        nested = self.subcommands(text)
        rest = words[1:]
        if nested and rest and rest[0] in nested:
            path.append(rest[0])
            text = self.help(path)
            rest = rest[1:]
        elif nested and rest and re.fullmatch(r"[a-z][a-z0-9-]*", rest[0]):
            return [f"`ggufrw {first} {rest[0]}`: no such command of `{first}`"]
        allowed = self.flags(text)
        label = "`ggufrw " + " ".join(path) + "`"
        failures = []
        i = 0
        while i < len(rest):
            w = rest[i]
            if w == "--":
                if first == "convert-hf":
                    allowed = self.flags(self.help(["quantize"]))
                    label = "`ggufrw convert-hf ... --` (llama-quantize's options)"
                    i += 1
                    continue
                break
            f = flag_of(w)
            if f:
                if f not in allowed:
                    failures.append(f"{label} has no option {f}")
                if f == "--peer-command":
                    break
            i += 1
        return failures


def flag_of(word):
    word = word.strip("[]()")
    m = re.fullmatch(r"(--[A-Za-z0-9][\w-]*)(=.*)?", word)
    if m:
        return m.group(1)
    if re.fullmatch(r"-[A-Za-z]", word):
        return word
    return None


def flag_words(words):
    return [f for f in (flag_of(w) for w in words) if f]


def split_words(text):
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return text.split()


def command_lines(text):
    """The `ggufrw ...` invocations of a shell line: the words after `ggufrw` for each."""
    words = split_words(text)
    segments = [[]]
    skip = False
    for w in words:
        if skip:  # the file of a redirection
            skip = False
        elif w in SEPARATORS:
            segments.append([])
        elif re.fullmatch(r"[0-9]?(>>?|<)(&[0-9])?", w):
            skip = not w.endswith(tuple("0123456789"))
        elif re.match(r"[0-9]?(>>?|<)", w):
            pass  # a redirection with its file: >out, 2>/dev/null
        else:
            segments[-1].append(w)
    out = []
    for seg in segments:
        while seg and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", seg[0]):
            seg = seg[1:]
        if seg and seg[0] == "$":
            seg = seg[1:]
        if seg and (seg[0] == "ggufrw" or seg[0].endswith("/ggufrw")):
            out.append(seg[1:])
    return out


def strip_comment(line):
    return re.split(r"(?:^|\s)#", line, maxsplit=1)[0]


# --- the check --------------------------------------------------------------------------------


def main():
    binary = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.environ.get("GGUFRW_BIN", os.path.join(ROOT, "target/release/ggufrw"))
    )
    if not os.access(binary, os.X_OK):
        print(
            f"docs-check: {binary} is not an executable ggufrw "
            "(build it with `cargo build --release`, or give its path)",
            file=sys.stderr,
        )
        return 2
    command = Command(binary)
    failures = []
    anchor_cache = {}

    def fail(path, line, what):
        failures.append(f"{path}:{line}: {what}")

    for path in markdown_files():
        doc_dir = os.path.dirname(path)
        for item in parse(path):
            if item[0] == "block":
                _, lang, body = item
                if lang not in SHELL_LANGUAGES:
                    continue
                joined = []  # backslash continuations joined, with the first line's number
                for line, text in body:
                    if joined and joined[-1][1].endswith("\\"):
                        joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + text)
                    else:
                        joined.append((line, text))
                for line, text in joined:
                    text = re.sub(r"^\s*\$\s+", "", strip_comment(text))
                    for args in command_lines(text):
                        for what in command.check(args):
                            fail(path, line, what)
                continue
            spans, links = spans_and_links(item[1])
            for line, span in spans:
                for word in path_words(span):
                    if not all(path_exists(w, doc_dir) for w in expand_braces(word)):
                        fail(path, line, f"`{word}`: no such file in the repository")
                lines = command_lines(span)
                if not lines:
                    words = split_words(span)
                    if (
                        words
                        and words[0] in command.commands
                        and words[0] != "help"
                        and any(flag_of(w) for w in words[1:])
                    ):
                        lines = [words]
                for args in lines:
                    for what in command.check(args):
                        fail(path, line, what)
            for line, target in links:
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                if file_part:
                    full = os.path.normpath(os.path.join(doc_dir, file_part))
                    if full.startswith(".."):
                        fail(path, line, f"link {target}: outside the repository")
                        continue
                    if full not in PATHS:
                        fail(path, line, f"link {target}: no such file")
                        continue
                else:
                    full = path
                if anchor and full.endswith(".md"):
                    if full not in anchor_cache:
                        anchor_cache[full] = anchors(os.path.join(ROOT, full))
                    if anchor not in anchor_cache[full]:
                        fail(path, line, f"link {target}: no heading #{anchor} in {full}")
    for f in sorted(set(failures), key=lambda f: (f.split(":")[0], int(f.split(":")[1]))):
        print(f)
    if failures:
        print(f"docs-check: {len(failures)} failure(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
