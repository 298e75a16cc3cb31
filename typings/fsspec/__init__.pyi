# What four uses of fsspec (it ships no types): a URL to its file system and path.
from fsspec import core as core
