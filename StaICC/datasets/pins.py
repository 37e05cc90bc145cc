"""SHA-256 of the two bundled index files, pinned in code.

``manifest.json`` holds the SHA-256 of every data file and ``datasets.json`` the per-dataset
constants (templates, label words, split sizes).  Pinning their own hashes here means that
no edit of the data folder alone (a row changed and its hash updated in the manifest, a
dataset pointed at another file) can pass as the standard.  Written by
``tools/freeze_data.py`` when it regenerates the data; do not edit by hand.
"""
MANIFEST_SHA256 = "3279c92816273148d112b8d63d1815b3867f2ed4989eb8efe19ddc8ddf417527"
CONSTANTS_SHA256 = "8e7c61b5c96359bfec05b8480cf6fa3c8c64c18536d57bce904b6c5a052b1e30"
