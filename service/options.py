"""marshmallow schemas built from the core's options registry (:mod:`sca.options`),
and the service settings that bound options and inputs.

Each :class:`sca.options.Option` becomes one field: its type (a strict
integer, a JSON boolean, a string among its choices), its range, and above
it the service's limit that :data:`LIMITS` names (``SCA_MAX_K`` ...), read
from the app config.  The rules between options are the core's own
(:func:`sca.options.validate`), so the API refuses what the core refuses,
with the same words.
"""

from __future__ import annotations

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from sca import options as registry
from sca.errors import SCAError

#: The setting that bounds an option from above, by group and option name (the API
#: answers 422 beyond; the generated docs name it, :mod:`.options_docs`).
LIMITS = {
    "clustering": {
        "k": "SCA_MAX_K",
        "k_hat": "SCA_MAX_K_HAT",
        "min_k": "SCA_MAX_K",
        "max_k": "SCA_MAX_K",
        "starts": "SCA_MAX_STARTS",
        "stable": "SCA_MAX_ITERATIONS",
        "max_iterations": "SCA_MAX_ITERATIONS",
    },
    "custom": {"max_iterations": "SCA_MAX_ITERATIONS"},
    "similar": {},
}
#: Beside ``SCA_MAX_N`` (the rows), the settings that bound an input kind's
#: ``columns`` (its features or runs) and the rows of a dense one (answered 413).
INPUT_LIMITS = {
    "data": {"columns": "SCA_MAX_M"},
    "consensus": {"dense": "SCA_MAX_DENSE_N"},
    "labels": {"columns": "SCA_MAX_RUNS"},
}


def limit(option: registry.Option, group: str = "clustering") -> str | None:
    """The name of the setting that bounds ``option`` of ``group``, or None."""
    return LIMITS[group].get(option.name)


class BaseSchema(Schema):
    class Meta:
        unknown = RAISE


class StrictBoolean(fields.Boolean):
    """A JSON boolean: true or false only.  marshmallow's own compares with ``in``,
    where ``1 == True``, so 1 and 1.0 would pass as true."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class Element(fields.Raw):
    """An element id (string) or 0-based index (integer), never a boolean."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ValidationError("must be an element id (string) or index (integer)")
        return value


def field(
    option: registry.Option,
    limits: dict,
    strict: bool = True,
    omitted: str = "none",
    group: str = "clustering",
) -> fields.Field:
    """The marshmallow field of ``option`` (of ``group``).

    ``limits`` maps setting names to values (the app config); ``strict``
    False takes integers written as text (query strings); ``omitted`` is what
    a missing value loads as: ``"none"`` (None: the consumer fills in the
    default), ``"default"`` (the registry's default) or ``"absent"``.
    """
    kwargs: dict = {"metadata": {"description": option.doc}}
    if option.required:
        kwargs["required"] = True
    elif omitted == "none":
        kwargs.update(load_default=None, allow_none=True)
    elif omitted == "default":
        kwargs.update(load_default=option.default, allow_none=option.default is None)
    else:
        kwargs["allow_none"] = option.default is None
    high, setting = option.maximum, limit(option, group)
    if setting is not None and limits.get(setting) is not None:
        high = limits[setting] if high is None else min(high, limits[setting])
    if option.type == "integer":
        return fields.Integer(
            strict=strict, validate=validate.Range(min=option.minimum, max=high), **kwargs
        )
    if option.type == "number":
        return fields.Float(
            allow_nan=False,
            validate=validate.Range(
                min=option.minimum, max=high, min_inclusive=not option.exclusive_minimum
            ),
            **kwargs,
        )
    if option.type == "boolean":
        return StrictBoolean(**kwargs)
    if option.type == "string":
        return fields.String(validate=validate.OneOf(option.choices or ()), **kwargs)
    if option.type == "element":
        return Element(**kwargs)
    return fields.Raw(**kwargs)


def schema_class(
    group: str,
    scope: str,
    limits: dict,
    name: str,
    strict: bool = True,
    omitted: str = "none",
    base: type[Schema] = BaseSchema,
) -> type[Schema]:
    """A schema of the options of ``group`` in ``scope``; its rules between fields
    are :func:`sca.options.validate`'s, reported on the field at fault."""
    options = registry.options_for(scope, group)
    prefix = registry.PREFIX[group]

    class RegistrySchema(base):  # type: ignore[valid-type, misc]
        @validates_schema
        def _between(self, data, **kwargs):
            try:
                registry.validate(
                    {o.name: data.get(o.name) for o in options if o.name in data}, group
                )
            except SCAError as exc:
                where = (exc.field or "_schema").removeprefix(prefix)
                raise ValidationError(str(exc), where) from None

    return RegistrySchema.from_dict(
        {o.name: field(o, limits, strict, omitted, group) for o in options}, name=name
    )
