"""The builders' side of contracts/SHA256SUMS: write a contract atomically and re-pin it,
or check that the file on disk is what a fresh build writes."""
import hashlib
import pathlib


def pin(path, text, add=True):
    """Sets the file's line in the SHA256SUMS beside it to the digest of `text`, in place,
    keeping the other lines (a new line goes last). add=False: only when a line for the file
    is already there. Returns the digest, or None when nothing was pinned."""
    path = pathlib.Path(path)
    sums = path.parent / "SHA256SUMS"
    lines = [line for line in (sums.read_text().splitlines() if sums.exists() else [])
             if line.strip()]
    mine = [i for i, line in enumerate(lines) if line.split()[-1].lstrip("*") == path.name]
    if not mine and not add:
        return None
    digest = hashlib.sha256(text.encode()).hexdigest()
    entry = f"{digest}  {path.name}"
    lines = [entry if i == mine[0] else line for i, line in enumerate(lines) if i not in mine[1:]]
    if not mine:
        lines.append(entry)
    tmp = sums.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(sums)
    return digest


def write(path, text):
    """Writes `text` to path atomically (a temporary beside it, then a rename)."""
    path = pathlib.Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def check(path, text, rebuild):
    """Prints whether the file holds exactly `text`; returns the exit status (0 same, 1 not).
    rebuild: the command that rewrites the file, named in the message."""
    path = pathlib.Path(path)
    same = path.exists() and path.read_text() == text
    print(f"{path}: " + ("up to date" if same else
                         f"differs from a fresh build; run {rebuild} to rewrite it and its pin"))
    return 0 if same else 1
