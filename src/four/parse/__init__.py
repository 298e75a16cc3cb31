"""V1 parsers: a reply to the actions it asks for, a submission, or a format error
(docs/components.md has the rules).

    regex_parse()      shell commands in fenced blocks of a text reply
    toolcall_parse()   calls of the ``bash`` tool (chat completions or Responses API)
    edit_parse()       file edits (whole files, SEARCH/REPLACE blocks) and shell commands
"""

from four.parse._edits import (
    EditAction,
    EditParse,
    FileEdit,
    SearchReplace,
    WholeFile,
    apply_edits,
    describe_edit,
    edit_parse,
)
from four.parse._regex import DEFAULT_TAGS, Block, RegexParse, fenced_blocks, regex_parse
from four.parse._toolcall import ToolcallParse, toolcall_parse

__all__ = [
    "DEFAULT_TAGS",
    "Block",
    "EditAction",
    "EditParse",
    "FileEdit",
    "RegexParse",
    "SearchReplace",
    "ToolcallParse",
    "WholeFile",
    "apply_edits",
    "describe_edit",
    "edit_parse",
    "fenced_blocks",
    "regex_parse",
    "toolcall_parse",
]
