"""V1 parsers: a reply to the actions it asks for, a submission, or a format error
(docs/components.md has the rules).

    regex_parse()      shell commands in fenced blocks of a text reply
    toolcall_parse()   calls of the ``bash`` tool (chat completions or Responses API)
    edit_parse()       file edits (whole files, SEARCH/REPLACE blocks) and shell commands
"""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # the names, each once (loaded on first use)
    from four.parse._edits import EditAction as EditAction
    from four.parse._edits import EditParse as EditParse
    from four.parse._edits import FileEdit as FileEdit
    from four.parse._edits import SearchReplace as SearchReplace
    from four.parse._edits import WholeFile as WholeFile
    from four.parse._edits import apply_edits as apply_edits
    from four.parse._edits import describe_edit as describe_edit
    from four.parse._edits import edit_parse as edit_parse
    from four.parse._regex import DEFAULT_TAGS as DEFAULT_TAGS
    from four.parse._regex import Block as Block
    from four.parse._regex import RegexParse as RegexParse
    from four.parse._regex import fenced_blocks as fenced_blocks
    from four.parse._regex import regex_parse as regex_parse
    from four.parse._toolcall import ToolcallParse as ToolcallParse
    from four.parse._toolcall import toolcall_parse as toolcall_parse

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
