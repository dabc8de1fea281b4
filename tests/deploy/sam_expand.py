"""template.yaml as AWS sees it: SAM's own transform, then one parameter set resolved.

Usage (with the tool venv's python, .venv from `make tools`: aws-sam-translator and
PyYAML come with aws-sam-cli, requirements-dev.txt):

    python tests/deploy/sam_expand.py TEMPLATE [--param Name=Value]... \
        [--account 123456789012] [--region us-east-1]

prints JSON to stdout: the template as samtranslator expands it (its transform, managed
policy ARNs from the map bundled with samtranslator, no AWS call), then resolved for the
parameter set: conditions evaluated; resources and outputs whose Condition is false
dropped; Fn::If, Ref (parameters, pseudo parameters, AWS::NoValue), Fn::Sub, Fn::Join,
Fn::Select, Fn::Split, Fn::Equals, Fn::Not, Fn::And, Fn::Or (and in Rules
Fn::EachMemberEquals) resolved. The template's
Rules are checked as CloudFormation checks them before it creates anything (each rule
whose RuleCondition holds must have every Assert true; a false one is an error with its
AssertDescription) and then dropped with Parameters. A Ref or Fn::GetAtt
of a resource stays as written ({"Ref": "X"}, {"Fn::GetAtt": ["X", "Arn"]}; an Fn::Sub
naming one keeps only those variables), so the output is still a CloudFormation template
cfn-lint and checkov read. Parameters and Conditions are gone; the parameter set used is
in Metadata.SamExpand.

A local CodeUri (`.`, `baseline/`) becomes s3://sam-expand-local/PATH, as `sam deploy`
would replace it by the uploaded artifact. Errors (a bad template, an unknown parameter,
a parameter outside its AllowedValues) go to stderr with exit status 2.
"""

import argparse
import copy
import json
import os
import re
import sys

import yaml
from samtranslator.internal.managed_policies import get_bundled_managed_policy_map
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform

NO_VALUE = object()
TAGS = ["Base64", "Cidr", "FindInMap", "GetAZs", "ImportValue", "Join", "Select", "Split", "Sub",
        "Transform", "And", "Equals", "If", "Not", "Or", "Length", "ToJsonString"]


class ExpandError(Exception):
    pass


def yaml_loader():
    """A SafeLoader that reads CloudFormation's short forms (!Ref, !If, !GetAtt A.B ...)."""

    class Loader(yaml.SafeLoader):
        pass

    def construct(name):
        def build(loader, node):
            if isinstance(node, yaml.ScalarNode):
                value = loader.construct_scalar(node)
            elif isinstance(node, yaml.SequenceNode):
                value = loader.construct_sequence(node, deep=True)
            else:
                value = loader.construct_mapping(node, deep=True)
            if name == "Ref" or name == "Condition":
                return {name: value}
            if name == "GetAtt" and isinstance(value, str):
                value = value.split(".", 1)
            return {"Fn::" + name: value}

        return build

    for name in TAGS + ["Ref", "Condition", "GetAtt"]:
        Loader.add_constructor("!" + name, construct(name))
    # Dates stay strings (AWSTemplateFormatVersion, policy Version).
    Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


class StaticPolicyLoader:
    """samtranslator's ManagedPolicyLoader without IAM: the ARNs bundled with it."""

    def __init__(self, partition):
        self.partition = partition

    def load(self):
        return get_bundled_managed_policy_map(self.partition) or {}


def local_code_uris(template):
    """Local CodeUri paths as the S3 artifacts `sam deploy` uploads (the transform needs S3)."""
    for resource in (template.get("Resources") or {}).values():
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri", "DefinitionUri"):
            uri = props.get(key)
            if isinstance(uri, str) and not uri.startswith("s3://"):
                props[key] = "s3://sam-expand-local/" + (uri.strip("/") or ".")


def partition_of(region):
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def parameter_values(template, given, account, region):
    """Every parameter's value (given, else its Default), checked as CloudFormation would."""
    declared = template.get("Parameters") or {}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ExpandError("unknown parameter(s): " + ", ".join(unknown))
    values = {}
    for name, spec in declared.items():
        if name in given:
            raw = given[name]
        elif "Default" in spec:
            raw = spec["Default"]
        else:
            raise ExpandError(f"parameter {name} has no Default: pass --param {name}=VALUE")
        raw = "" if raw is None else str(raw)
        allowed = spec.get("AllowedValues")
        if allowed is not None and raw not in [str(a) for a in allowed]:
            raise ExpandError(f"parameter {name}={raw!r} is not one of {allowed}")
        pattern = spec.get("AllowedPattern")
        if pattern is not None and spec.get("Type") == "String" and not re.fullmatch(pattern, raw):
            raise ExpandError(f"parameter {name}={raw!r} does not match AllowedPattern {pattern}")
        if "MaxLength" in spec and len(raw) > int(spec["MaxLength"]):
            raise ExpandError(f"parameter {name}={raw!r} is longer than MaxLength {spec['MaxLength']}")
        if spec.get("Type") == "Number":
            number = float(raw)
            if "MaxValue" in spec and number > float(spec["MaxValue"]):
                raise ExpandError(f"parameter {name}={raw} is above MaxValue {spec['MaxValue']}")
            if "MinValue" in spec and number < float(spec["MinValue"]):
                raise ExpandError(f"parameter {name}={raw} is below MinValue {spec['MinValue']}")
        values[name] = raw.split(",") if spec.get("Type", "").startswith(("CommaDelimitedList", "List<")) else raw
    partition = partition_of(region)
    values.update({
        "AWS::AccountId": account,
        "AWS::Region": region,
        "AWS::Partition": partition,
        "AWS::URLSuffix": "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com",
        "AWS::StackName": "sam-expand",
        "AWS::StackId": f"arn:{partition}:cloudformation:{region}:{account}:stack/sam-expand/00000000-0000-0000-0000-000000000000",
        "AWS::NotificationARNs": [],
    })
    return values


class Resolver:
    """Intrinsic functions of one parameter set; resources' Refs and GetAtts stay."""

    def __init__(self, values, conditions, resources):
        self.values = values
        self.conditions_raw = conditions
        self.conditions = {}
        self.resources = resources

    def condition(self, name):
        if name not in self.conditions:
            if name not in self.conditions_raw:
                raise ExpandError(f"unknown condition {name}")
            self.conditions[name] = None  # a cycle reads as unknown below
            result = self.value(self.conditions_raw[name])
            if not isinstance(result, bool):
                raise ExpandError(f"condition {name} does not resolve to true or false: {result!r}")
            self.conditions[name] = result
        if self.conditions[name] is None:
            raise ExpandError(f"condition {name} refers to itself")
        return self.conditions[name]

    def value(self, node):
        if isinstance(node, list):
            out = [self.value(item) for item in node]
            return [item for item in out if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            handler = self.FUNCTIONS.get(key)
            if handler is not None:
                return handler(self, arg)
        out = {}
        for key, item in node.items():
            resolved = self.value(item)
            if resolved is not NO_VALUE:
                out[key] = resolved
        return out

    def ref(self, name):
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.values:
            return copy.deepcopy(self.values[name])
        if name in self.resources:
            return {"Ref": name}
        raise ExpandError(f"Ref to unknown name {name}")

    def get_att(self, arg):
        return {"Fn::GetAtt": self.value(arg)}

    def fn_if(self, arg):
        name, then, otherwise = arg
        return self.value(then if self.condition(name) else otherwise)

    def fn_sub(self, arg):
        if isinstance(arg, list):
            text, variables = arg[0], self.value(arg[1])
        else:
            text, variables = arg, {}
        left = {}

        def substitute(match):
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                found = variables[name]
            elif name in self.values:
                found = self.values[name]
            elif name.split(".", 1)[0] in self.resources:
                return match.group(0)
            else:
                raise ExpandError(f"Fn::Sub names unknown variable {name} in {text!r}")
            if isinstance(found, (str, int, float)) and not isinstance(found, bool):
                return str(found)
            left[name] = found
            return match.group(0)

        out = re.sub(r"\$\{([^}]+)\}", substitute, text)
        if "${" not in out.replace("${!", ""):
            return out
        if left:
            return {"Fn::Sub": [out, left]}
        return {"Fn::Sub": out}

    def fn_join(self, arg):
        sep, items = arg[0], self.value(arg[1])
        if isinstance(items, list) and all(isinstance(i, (str, int, float)) for i in items):
            return sep.join(str(i) for i in items)
        return {"Fn::Join": [sep, items]}

    def fn_select(self, arg):
        index, items = self.value(arg[0]), self.value(arg[1])
        if isinstance(items, list) and isinstance(index, (str, int)):
            return items[int(index)]
        return {"Fn::Select": [index, items]}

    def fn_split(self, arg):
        sep, text = arg[0], self.value(arg[1])
        return text.split(sep) if isinstance(text, str) else {"Fn::Split": [sep, text]}

    def fn_equals(self, arg):
        left, right = (self.value(a) for a in arg)
        return str(left) == str(right) if not isinstance(left, (dict, list)) else left == right

    def boolean(self, node):
        if isinstance(node, dict) and set(node) == {"Condition"}:
            return self.condition(node["Condition"])
        result = self.value(node)
        if not isinstance(result, bool):
            raise ExpandError(f"not a condition: {node!r}")
        return result

    FUNCTIONS = {
        "Ref": ref,
        "Fn::GetAtt": get_att,
        "Fn::If": fn_if,
        "Fn::Sub": fn_sub,
        "Fn::Join": fn_join,
        "Fn::Select": fn_select,
        "Fn::Split": fn_split,
        "Fn::Equals": fn_equals,
        "Fn::Not": lambda self, arg: not self.boolean(arg[0]),
        "Fn::And": lambda self, arg: all(self.boolean(a) for a in arg),
        "Fn::Or": lambda self, arg: any(self.boolean(a) for a in arg),
        # Rules only: every member of a list parameter equals the string.
        "Fn::EachMemberEquals": lambda self, arg: all(
            str(m) == str(self.value(arg[1])) for m in self.value(arg[0])),
        "Condition": lambda self, arg: self.condition(arg),
    }


def resolve(expanded, values, meta):
    """The expanded template for one parameter set (see the module's docstring)."""
    resources = expanded.get("Resources") or {}
    resolver = Resolver(values, expanded.get("Conditions") or {}, resources)
    kept = {}
    for name, resource in resources.items():
        if "Condition" in resource and not resolver.condition(resource["Condition"]):
            continue
        kept[name] = resource
    resolver.resources = kept
    check_rules(expanded.get("Rules"), resolver)
    out = {k: v for k, v in expanded.items()
           if k not in ("Parameters", "Conditions", "Rules", "Resources", "Outputs")}
    out["Metadata"] = dict(out.get("Metadata") or {}, SamExpand=meta)
    out["Resources"] = {}
    for name, resource in kept.items():
        resource = {k: v for k, v in resource.items() if k != "Condition"}
        resource["DependsOn"] = depends_on_kept(resource.get("DependsOn"), kept)
        if resource["DependsOn"] is None:
            del resource["DependsOn"]
        out["Resources"][name] = resolver.value(resource)
    outputs = {}
    for name, output in (expanded.get("Outputs") or {}).items():
        if "Condition" in output and not resolver.condition(output["Condition"]):
            continue
        outputs[name] = resolver.value({k: v for k, v in output.items() if k != "Condition"})
    if outputs:
        out["Outputs"] = outputs
    return out


def check_rules(rules, resolver):
    """CloudFormation's template rules for this parameter set: a rule applies when its
    RuleCondition (if any) is true, and then every Assert must be true."""
    for name, rule in (rules or {}).items():
        when = rule.get("RuleCondition")
        if when is not None and not resolver.boolean(when):
            continue
        for assertion in rule.get("Assertions") or []:
            if not resolver.boolean(assertion["Assert"]):
                raise ExpandError(f"rule {name}: {assertion.get('AssertDescription', 'an assertion is false')}")


def depends_on_kept(depends, kept):
    if depends is None:
        return None
    names = [depends] if isinstance(depends, str) else depends
    names = [n for n in names if n in kept]
    return names or None


def expand(path, given, account, region):
    with open(path, encoding="utf-8") as f:
        template = yaml.load(f, Loader=yaml_loader())  # noqa: S506 (a SafeLoader)
    if not isinstance(template, dict):
        raise ExpandError(f"{path}: not a template")
    values = parameter_values(template, given, account, region)
    local_code_uris(template)
    sam_values = {k: ",".join(v) if isinstance(v, list) else v for k, v in values.items()}
    # samtranslator asks a boto3 session for the region even when AWS::Region is given;
    # it then makes no call (the managed policies come from StaticPolicyLoader).
    os.environ["AWS_DEFAULT_REGION"] = region
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    try:
        expanded = transform(template, sam_values, StaticPolicyLoader(values["AWS::Partition"]),
                             passthrough_metadata=True)
    except InvalidDocumentException as e:
        raise ExpandError("samtranslator: " + "; ".join(str(c) for c in e.causes)) from e
    meta = {"Parameters": {k: sam_values[k] for k in (template.get("Parameters") or {})},
            "AccountId": account, "Region": region}
    return resolve(expanded, values, meta)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("template")
    parser.add_argument("--param", action="append", default=[], metavar="Name=Value")
    parser.add_argument("--account", default="123456789012")
    parser.add_argument("--region", default="us-east-1")
    args = parser.parse_args(argv)
    given = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"sam_expand: --param {item!r}: expected Name=Value", file=sys.stderr)
            return 2
        given[name] = value
    try:
        out = expand(args.template, given, args.account, args.region)
    except (ExpandError, OSError, yaml.YAMLError) as e:
        print(f"sam_expand: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
