from collections import deque
from collections.abc import Iterable

class _Error(Exception):
    message: str
    absolute_path: deque[str | int]

class ValidationError(_Error): ...
class SchemaError(_Error): ...

def best_match(errors: Iterable[ValidationError]) -> ValidationError | None: ...
