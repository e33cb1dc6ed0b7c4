"""Reads [{"schema": …, "instance": …}, …] from the file named, prints one line per pair: 1 when
PyPI's jsonschema (Draft 2020-12) finds the instance valid, 0 when not."""
import json
import sys

from jsonschema import Draft202012Validator

pairs = json.load(open(sys.argv[1]))
print("".join("1" if Draft202012Validator(pair["schema"]).is_valid(pair["instance"]) else "0" for pair in pairs))
