"""The schema, index and result shapes of store/lite_client.py: what the store builds through a client
(`create_schema`, `prepare_index_params`) made of milvus-lite's public schema types, and the engine's rows
given back as pymilvus decodes them over gRPC (JSON parsed, float vectors and distances as float32).

Why its own module: the client maps calls, this maps values; both follow milvus-lite's documented
in-process API (`milvus_lite.CollectionSchema`, `FieldSchema`, `DataType`, `Function`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from milvus_lite import CollectionSchema, DataType, FieldSchema
from milvus_lite import Function as LiteFunction


class LiteSchema:
    """pymilvus' `CollectionSchema` as the store builds it (`add_field`, `add_function`), kept for milvus-lite."""

    def __init__(self, auto_id: bool = False, enable_dynamic_field: bool = False) -> None:
        self.auto_id = auto_id
        self.enable_dynamic_field = enable_dynamic_field
        self.fields: list[FieldSchema] = []
        self.functions: list[Any] = []

    def add_field(self, field_name: str, datatype: DataType, is_primary: bool = False, **kwargs: Any) -> LiteSchema:
        self.fields.append(FieldSchema(name=field_name, dtype=datatype, is_primary=is_primary,
                                       auto_id=is_primary and self.auto_id, **kwargs))
        return self

    def add_function(self, function: Any) -> LiteSchema:
        self.functions.append(function)
        return self

    def build(self, properties: dict[str, Any] | None = None) -> CollectionSchema:
        """milvus-lite's schema: a function's output field marked as such (what Milvus' proto carries)."""
        outputs = {name for fn in self.functions for name in fn.output_field_names}
        for f in self.fields:
            f.is_function_output = f.name in outputs
        functions = [LiteFunction(name=fn.name, function_type=fn.function_type, input_field_names=list(fn.input_field_names),
                                  output_field_names=list(fn.output_field_names), params=dict(getattr(fn, "params", {}) or {}))
                     for fn in self.functions]
        return CollectionSchema(fields=list(self.fields), enable_dynamic_field=self.enable_dynamic_field,
                                functions=functions, properties=dict(properties or {}))


@dataclass
class IndexParam:
    """One index of pymilvus' `IndexParams`: the field, its type and metric, its build parameters."""

    field_name: str
    index_type: str = "AUTOINDEX"
    metric_type: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def spec(self) -> dict[str, Any]:
        """The dict `Collection.create_index` takes."""
        out: dict[str, Any] = {"index_type": self.index_type or "AUTOINDEX", "params": dict(self.params)}
        if self.metric_type:
            out["metric_type"] = self.metric_type
        return out


class IndexParams(list):  # type: ignore[type-arg]
    """pymilvus' `IndexParams`: a list of indexes, one added by `add_index`."""

    def add_index(self, field_name: str, index_type: str = "AUTOINDEX", metric_type: str | None = None,
                  params: dict[str, Any] | None = None, **extra: Any) -> None:
        extra.pop("index_name", None)  # milvus-lite names an index by its field
        self.append(IndexParam(field_name, index_type, metric_type, {**(params or {}), **extra}))


def describe(name: str, schema: CollectionSchema, partitions: int) -> dict[str, Any]:
    """What pymilvus' `describe_collection` returns, for the keys the store and its tests read."""
    fields = []
    for f in schema.fields:
        params: dict[str, Any] = {}
        if f.dim is not None:
            params["dim"] = int(f.dim)
        if f.max_length is not None:
            params["max_length"] = int(f.max_length)
        if f.enable_analyzer:
            params["enable_analyzer"] = True
        item: dict[str, Any] = {"name": f.name, "type": f.dtype, "params": params}
        if f.is_primary:
            item.update(is_primary=True, auto_id=bool(f.auto_id))
        if f.is_function_output:
            item["is_function_output"] = True
        fields.append(item)
    auto_id = any(f.is_primary and f.auto_id for f in schema.fields)
    return {
        "collection_name": name,
        "auto_id": auto_id,
        "num_shards": 1,
        "description": "",
        "fields": fields,
        "functions": [{"name": fn.name, "type": fn.function_type, "input_field_names": list(fn.input_field_names),
                       "output_field_names": list(fn.output_field_names), "params": dict(fn.params)}
                      for fn in schema.functions],
        "enable_dynamic_field": schema.enable_dynamic_field,
        "properties": {str(k): str(v) for k, v in schema.properties.items()},
        "num_partitions": partitions,
    }


class Decoder:
    """An engine row as pymilvus decodes the same row sent over gRPC: JSON fields parsed, float vectors
    as the float32 they travel as, the rest as they are (a fresh object: the engine's stay its own)."""

    def __init__(self, schema: CollectionSchema) -> None:
        self.json = {f.name for f in schema.fields if f.dtype == DataType.JSON}
        self.vectors = {f.name for f in schema.fields if f.dtype == DataType.FLOAT_VECTOR}
        self.dynamic = schema.enable_dynamic_field

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in row.items():
            if key in self.json and value is not None:
                value = json.loads(value) if isinstance(value, (str, bytes)) else json.loads(json.dumps(value))
            elif key in self.vectors and value is not None:
                value = np.asarray(value, dtype=np.float32).tolist()
            out[key] = value
        return out

    def rows(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.row(r) for r in rows]

    def written(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows to write as pymilvus sends them: copies (the engine writes ids into the dicts it is given), float
        vectors as float32 numbers (pymilvus takes numpy arrays and numpy floats alike; the engine wants numbers)."""
        out = []
        for row in rows:
            row = dict(row)
            for name in self.vectors & row.keys():
                if row[name] is not None:
                    row[name] = np.asarray(row[name], dtype=np.float32).tolist()
            out.append(row)
        return out

    def queries(self, data: list[Any], anns_field: str | None) -> list[Any]:
        """Query vectors of a dense field as float32 numbers, as they travel to a server; texts (BM25) as they are."""
        field = anns_field or (next(iter(self.vectors)) if len(self.vectors) == 1 else None)
        if field not in self.vectors:
            return list(data)
        return [q if isinstance(q, str) else np.asarray(q, dtype=np.float32).tolist() for q in data]


def float32(value: float) -> float:
    """A distance as pymilvus reads it: the float32 the server sent."""
    return float(np.float32(value))
