"""Tests of ``envscope.files``: the dotenv reader and the one non-blocking file reader."""
