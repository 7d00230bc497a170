"""Files: the file-system seam and one reader per file format.

Owns the non-blocking regular-file reader and the ``FileSystem`` seam
(``_fs``), the YAML composer (``_yaml``), the JSON reader (``_json``), the
dotenv reader (``_dotenv``) and the trusted-file check (``_trusted_file``).

May import: ``envscope._inputs`` (the name rule) and ``envscope.errors`` only.
Everything else in envscope reads files
through this subpackage.
"""
