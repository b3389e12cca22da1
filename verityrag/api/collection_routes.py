"""``GET /collections`` and ``DELETE /collections/{name}``: the collections the index holds, and
removing one with its documents (the bundled ``demo`` collection among them)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool

from verityrag.api.deps import PipelineDep
from verityrag.api.error_responses import ApiError
from verityrag.api.routing import NOT_FOUND, READ, READ_RESPONSES, WRITE, WRITE_RESPONSES, RouteTable
from verityrag.api.schemas import CollectionOut, CollectionsOut, DeletedCollectionOut
from verityrag.index.collections import collection_sizes, remove_collection

collection_endpoints = RouteTable()


@collection_endpoints.get_with_head(
    "/collections",
    response_model=CollectionsOut,
    responses=READ_RESPONSES,
    dependencies=READ,
    tags=["documents"],
)
async def list_collections(p: PipelineDep) -> CollectionsOut:
    """Each collection (the `collection` metadata key) with its number of documents; documents
    added without one are the collection `yours`."""
    sizes = await run_in_threadpool(collection_sizes, p.writer.metadata_index)
    return CollectionsOut(
        collections=[CollectionOut(name=name, documents=n) for name, n in sorted(sizes.items())]
    )


@collection_endpoints.delete(
    "/collections/{name}",
    response_model=DeletedCollectionOut,
    responses={**WRITE_RESPONSES, **NOT_FOUND},
    dependencies=WRITE,
    tags=["documents"],
)
async def delete_collection(name: str, p: PipelineDep) -> DeletedCollectionOut:
    """Remove every document of the collection `name` (e.g. `demo`, the bundled corpus; `yours`,
    the documents added without a collection)."""
    deleted = await run_in_threadpool(remove_collection, p, p.writer.metadata_index, name)
    if not deleted:
        raise ApiError(404, "name", f"no collection {name!r}")
    return DeletedCollectionOut(name=name, deleted_documents=deleted)
