"""rdbspec.read.location without a store: which paths are URLs, where a store's settings come
from (the reader's options, then Spark's S3A settings, then the AWS SDKs' environment), the
URLs of a listing's entries, and the ranges a split's reader fetches."""

from __future__ import annotations

import pytest

from rdbspec.read import location
from rdbspec.read.location import Store


@pytest.mark.parametrize("path, url", [("s3://b/k.rdb", True), ("S3A://b/k", True), ("gs://b/k", True),
                                       ("abfss://c@a.dfs.core.windows.net/p", True), ("hdfs://nn:8020/p", True),
                                       ("file:///tmp/x.rdb", False), ("/tmp/x.rdb", False), ("http://h/x", False),
                                       ("-", False)])
def test_which_paths_are_urls(path: str, url: bool) -> None:
    assert location.is_url(path) is url


def test_file_urls_are_local_paths() -> None:
    assert location.local_path("file:///tmp/a.rdb") == "/tmp/a.rdb"
    assert location.local_path("file:a.rdb") == "a.rdb" and location.local_path("a.rdb") == "a.rdb"


def test_store_settings_options_first_then_s3a_then_environment() -> None:
    env = {"AWS_ENDPOINT_URL": "http://env:1", "AWS_REGION": "env-region"}
    conf = {"spark.hadoop.fs.s3a.endpoint": "conf:2", "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.access.key": "conf-key", "spark.hadoop.fs.s3a.secret.key": "conf-secret"}
    assert Store.from_settings({}, {}, env) == Store(endpoint="http://env:1", region="env-region")
    assert Store.from_settings({}, conf, env) == Store("http://conf:2", "env-region", "conf-key", "conf-secret")
    options = {"S3.Endpoint": "https://opt:3", "s3.region": "opt-region", "s3.accessKey": "k", "s3.secretKey": "s"}
    assert Store.from_settings(options, conf, env) == Store("https://opt:3", "opt-region", "k", "s")
    assert Store.from_settings({}, {}, {"AWS_ENDPOINT_URL_S3": "http://s3only:4", "AWS_ENDPOINT_URL": "x"}).endpoint \
        == "http://s3only:4"
    # without connection.ssl.enabled=false, a bare host:port is https (S3A's default)
    assert Store.from_settings({}, {"fs.s3a.endpoint": "h:5"}, {}).endpoint == "h:5"


@pytest.mark.parametrize("url, entry, listed", [
    ("s3://bucket/dir", "bucket/dir/a.rdb", "s3://bucket/dir/a.rdb"),
    ("gs://bucket/dir", "bucket/dir/a.rdb", "gs://bucket/dir/a.rdb"),
    ("abfs://container@account.dfs.core.windows.net/dir", "container/dir/a.rdb",
     "abfs://container@account.dfs.core.windows.net/dir/a.rdb"),
    ("hdfs://namenode:8020/dir", "/dir/a.rdb", "hdfs://namenode:8020/dir/a.rdb"),
])
def test_a_listing_entry_is_named_by_its_url(url: str, entry: str, listed: str) -> None:
    assert location._url_of(url, entry) == listed


def test_fetched_ranges_are_merged_and_kept_in_the_object() -> None:
    assert location._merged([(50, 80), (0, 10), (5, 20), (20, 30), (90, 200), (40, 40)], 100) == \
        [(0, 30), (50, 80), (90, 100)]


def test_store_paths_find_siblings_as_pathlib_does() -> None:
    shard = location.path_of("s3://b/set/snap-0001.dfs")
    assert shard.name == "snap-0001.dfs" and str(shard.parent) == "s3://b/set"
    assert str(shard.with_name("snap-summary.dfs")) == "s3://b/set/snap-summary.dfs"
    assert location.path_of("file:///tmp/x.rdb").name == "x.rdb"
