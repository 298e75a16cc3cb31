# The part of jsonschema four uses (it ships no type information).
from jsonschema.exceptions import SchemaError as SchemaError
from jsonschema.exceptions import ValidationError as ValidationError
