"""The results files' kernel words. CSVs written before the kernel list (kernels/include/
lm_kernels.h) name two kernels by their old words; every script reads them as the new ones,
as `longmix sweep --resume` does."""

OLD_NAMES = {"attn_decode_q": "kvq_decode", "affine_scan": "scan_affine"}


MAMBA1 = ("mamba1_scan", "mamba1_step")


def canonical(row):
    """Rewrites row["kernel"] (a csv.DictReader row) from an old word to its word, and gives a
    Mamba-1 row of a file written before the disc column its discretization (those builds
    measured the exact ZOH only: disc "zoh"); returns row."""
    if "kernel" in row:
        row["kernel"] = OLD_NAMES.get(row["kernel"], row["kernel"])
        if row["kernel"] in MAMBA1 and not row.get("disc"):
            row["disc"] = "zoh"
    return row
