"""CloudFormation's intrinsic functions over the local stack: the one resolver every local module uses.

``Intrinsics`` evaluates the template's Conditions from its parameter values (each parameter's
Default, then the values the stack was created with) and takes the branch of ``Fn::If`` its
condition picks, as CloudFormation does. It knows the stack's resources by what they became: the
physical id ``Ref`` returns and the attributes ``Fn::GetAtt`` reads. Nothing here calls AWS.

Semantics follow the intrinsic function reference,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference.html,
and its pages for Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Select, Fn::Split, Fn::FindInMap and the
condition functions (intrinsic-function-reference-conditions.html); ``AWS::NoValue`` removes the
property (or list item) it stands for (pseudo-parameter-reference.html).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shareplane.domain.errors import InvalidInputError


class TemplateResourceError(InvalidInputError):
    """A template value or resource the local stack cannot resolve or create as written."""


class _NoValue:
    """What ``{"Ref": "AWS::NoValue"}`` resolves to: the property it stands for is removed."""

    def __repr__(self) -> str:
        return "AWS::NoValue"


#: The resolved value of ``AWS::NoValue``; a mapping or list drops it, a caller resolving one value checks it.
NO_VALUE: Any = _NoValue()

_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


class Intrinsics:
    """Resolves a template fragment against one stack: its parameters, pseudo parameters and resources.

    ``parameters`` are the values the stack was given; a parameter not given takes its Default.
    ``physical_ids`` (logical id -> what Ref returns) and ``attributes`` ((logical id, attribute) ->
    value) describe the resources that exist; ``with_resources`` adds more (the emulator's, as it
    creates them).
    """

    def __init__(
        self,
        template: Mapping[str, Any],
        *,
        parameters: Mapping[str, str] | None = None,
        pseudo: Mapping[str, str] | None = None,
        physical_ids: Mapping[str, str] | None = None,
        attributes: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        self.template = template
        declared: Mapping[str, Any] = template.get("Parameters") or {}
        self.parameters: dict[str, str] = {
            name: str(definition["Default"])
            for name, definition in declared.items()
            if isinstance(definition, Mapping) and "Default" in definition
        }
        self.parameters.update({k: str(v) for k, v in (parameters or {}).items()})
        self._declared = declared
        self.pseudo = dict(pseudo or {})
        self.physical_ids = dict(physical_ids or {})
        self.attributes = dict(attributes or {})
        self.conditions: Mapping[str, Any] = template.get("Conditions") or {}
        self._evaluated: dict[str, bool] = {}

    def with_resources(
        self, physical_ids: Mapping[str, str], attributes: Mapping[tuple[str, str], str]
    ) -> Intrinsics:
        """The same stack with more resources known (conditions depend on parameters only: kept)."""
        more = Intrinsics(
            self.template,
            parameters=self.parameters,
            pseudo=self.pseudo,
            physical_ids={**self.physical_ids, **physical_ids},
            attributes={**self.attributes, **attributes},
        )
        more._evaluated = self._evaluated
        return more

    # -- conditions ---------------------------------------------------------------------------
    def condition(self, name: str) -> bool:
        """A named condition of the template's Conditions section, evaluated once."""
        if name not in self._evaluated:
            if name not in self.conditions:
                raise TemplateResourceError(
                    f"Conditions.{name}", "is not defined", "define it or fix its name"
                )
            self._evaluated[name] = self._truth(self.conditions[name], f"Conditions.{name}")
        return self._evaluated[name]

    def _truth(self, node: Any, where: str) -> bool:
        if isinstance(node, Mapping) and len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Fn::Equals":
                left, right = (self.resolve(v) for v in arg)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not self._truth(arg[0], where)
            if key == "Fn::And":
                return all(self._truth(v, where) for v in arg)
            if key == "Fn::Or":
                return any(self._truth(v, where) for v in arg)
            if key == "Condition":
                return self.condition(arg)
        if isinstance(node, bool):
            return node
        raise TemplateResourceError(
            where,
            f"{node!r} is not a condition",
            "use Fn::Equals, Fn::Not, Fn::And, Fn::Or or Condition",
        )

    def choose(self, node: Any) -> Any:
        """``node`` with each Fn::If replaced by the branch its condition takes (nothing else resolved)."""
        if isinstance(node, list):
            return [self.choose(x) for x in node]
        if not isinstance(node, Mapping):
            return node
        if set(node) == {"Fn::If"}:
            name, yes, no = node["Fn::If"]
            return self.choose(yes if self.condition(name) else no)
        return {k: self.choose(v) for k, v in node.items()}

    # -- values ---------------------------------------------------------------------------------
    def resolve(self, node: Any) -> Any:
        """``node`` with every intrinsic replaced by its value (AWS::NoValue removes the key or item)."""
        if isinstance(node, list):
            return [v for v in (self.resolve(x) for x in node) if v is not NO_VALUE]
        if not isinstance(node, Mapping):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref":
                return self._ref(arg)
            if key.startswith("Fn::"):
                return self._function(key, arg)
        out = {}
        for key, value in node.items():
            resolved = self.resolve(value)
            if resolved is not NO_VALUE:
                out[key] = resolved
        return out

    def _function(self, key: str, arg: Any) -> Any:
        if key == "Fn::GetAtt":
            logical, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
            return self._attribute(logical, str(self.resolve(attribute)))
        if key == "Fn::Sub":
            return self._sub(arg)
        if key == "Fn::Join":
            delimiter, values = arg
            return str(delimiter).join(str(v) for v in self.resolve(values))
        if key == "Fn::Select":
            index, values = arg
            return self.resolve(values)[int(self.resolve(index))]
        if key == "Fn::Split":
            delimiter, text = arg
            return str(self.resolve(text)).split(delimiter)
        if key == "Fn::If":
            name, yes, no = arg
            return self.resolve(yes if self.condition(name) else no)
        if key == "Fn::FindInMap":
            mapping, first, second = (str(self.resolve(v)) for v in arg)
            try:
                return self.template["Mappings"][mapping][first][second]
            except KeyError as exc:
                raise TemplateResourceError(
                    f"Mappings.{mapping}.{first}.{second}", "is not defined", "add it to the Mappings section"
                ) from exc
        if key in ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or"):
            return self._truth({key: arg}, key)
        raise TemplateResourceError(
            key, "is not an intrinsic the local stack resolves", "resolve it another way"
        )

    def _ref(self, name: Any) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.parameters:
            value = self.parameters[name]
            if (self._declared.get(name) or {}).get("Type") == "CommaDelimitedList":
                return [item.strip() for item in value.split(",")]
            return value
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.physical_ids:
            return self.physical_ids[name]
        resource = (self.template.get("Resources") or {}).get(name)
        if resource is not None and "Condition" in resource and not self.condition(resource["Condition"]):
            raise TemplateResourceError(
                f"Ref {name}",
                f"names a resource whose condition {resource['Condition']} is false",
                f"refer to it inside Fn::If [{resource['Condition']}, ...]",
            )
        raise TemplateResourceError(
            f"Ref {name}", "is not a parameter, pseudo parameter or created resource", "fix the name"
        )

    def _attribute(self, logical: str, attribute: str) -> str:
        if (logical, attribute) in self.attributes:
            return self.attributes[(logical, attribute)]
        known = sorted(a for (owner, a) in self.attributes if owner == logical)
        raise TemplateResourceError(
            f"{logical}.{attribute}",
            "is not an attribute the emulator knows, nor one the local stack derives for moto's resources",
            f"use one of {known}" if known else f"refer to a resource the local stack created, not {logical}",
        )

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(self.resolve(variables[name]))
            if "." in name:
                return str(self._attribute(*name.split(".", 1)))
            return str(self._ref(name))

        return _PLACEHOLDER.sub(value, text)


def references(node: Any) -> set[str]:
    """Logical ids a template fragment refers to (Ref, Fn::GetAtt, Fn::Sub placeholders)."""
    found: set[str] = set()
    if isinstance(node, list):
        for item in node:
            found |= references(item)
    elif isinstance(node, Mapping):
        for key, arg in node.items():
            if key == "Ref" and isinstance(arg, str):
                found.add(arg)
            elif key == "Fn::GetAtt":
                found.add((arg.split(".", 1) if isinstance(arg, str) else arg)[0])
            elif key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                found |= {p.split(".", 1)[0] for p in re.findall(r"\$\{([^!}][^}]*)\}", text)}
                if not isinstance(arg, str):
                    found |= references(arg[1])
            else:
                found |= references(arg)
    return found
