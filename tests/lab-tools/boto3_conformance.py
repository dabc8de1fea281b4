"""boto3 against the lab (tests/lab_tools.rs): paginated listings with a delimiter and
a small MaxKeys give every key once, and conditional PUT / GET / HEAD / DELETE answer
412 / 304 where S3 does. Prints one JSON line of what it checked; exits 1 on the first
difference, saying what it was."""

import argparse
import datetime
import hashlib
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def status_of(call):
    try:
        call()
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code")
    return 200, None


def expect(what, call, want_status, want_code=None):
    got_status, got_code = status_of(call)
    if got_status != want_status or (want_code and got_code != want_code):
        fail(f"{what}: wanted {want_status} {want_code or ''}, got {got_status} {got_code}")


def walk(s3, bucket, prefix, max_keys, version):
    """Every key under prefix, one level at a time (Delimiter='/'), with pages of max_keys."""
    keys, prefixes, pages = [], [], 0
    if version == 2:
        pager = s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix, Delimiter="/", PaginationConfig={"PageSize": max_keys})
    else:
        pager = s3.get_paginator("list_objects").paginate(
            Bucket=bucket, Prefix=prefix, Delimiter="/", PaginationConfig={"PageSize": max_keys})
    for page in pager:
        pages += 1
        entries = page.get("Contents", []) + page.get("CommonPrefixes", [])
        if len(entries) > max_keys:
            fail(f"a page of {len(entries)} entries with MaxKeys={max_keys}")
        keys += [o["Key"] for o in page.get("Contents", [])]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    if len(prefixes) != len(set(prefixes)):
        fail(f"a common prefix given twice under {prefix!r}: {prefixes}")
    for p in prefixes:
        sub_keys, sub_pages = walk(s3, bucket, p, max_keys, version)
        keys += sub_keys
        pages += sub_pages
    return keys, pages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--ca")
    args = ap.parse_args()
    s3 = boto3.client(
        "s3", endpoint_url=args.endpoint, region_name="us-east-1",
        aws_access_key_id="s3sweep", aws_secret_access_key="s3sweep-local-secret",
        verify=args.ca if args.ca else True,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    b = args.bucket

    written = {}
    for i in range(5):
        written[f"top-{i}"] = f"top {i}".encode()
    for d in range(4):
        for i in range(6):
            written[f"dir-{d}/k-{i}"] = f"{d}/{i}".encode()
        for i in range(3):
            written[f"dir-{d}/sub/deep-{i}"] = f"{d}/sub/{i}".encode() * 50
    for key, body in written.items():
        etag = s3.put_object(Bucket=b, Key=key, Body=body)["ETag"]
        if etag != '"%s"' % hashlib.md5(body).hexdigest():
            fail(f"{key}: ETag {etag} is not the MD5 of the body")

    checked = {}
    for version in (1, 2):
        keys, pages = walk(s3, b, "", 3, version)
        if len(keys) != len(set(keys)):
            fail(f"ListObjects v{version}: a key given twice")
        if sorted(keys) != sorted(written):
            fail(f"ListObjects v{version}: {len(keys)} keys, wanted {len(written)}")
        checked[f"list_v{version}"] = {"keys": len(keys), "pages": pages}

    key = "conditional"
    first = s3.put_object(Bucket=b, Key=key, Body=b"one", IfNoneMatch="*")["ETag"]
    expect("PUT If-None-Match: * on an existing key",
           lambda: s3.put_object(Bucket=b, Key=key, Body=b"two", IfNoneMatch="*"), 412, "PreconditionFailed")
    expect("PUT If-Match another ETag",
           lambda: s3.put_object(Bucket=b, Key=key, Body=b"two", IfMatch='"00"'), 412, "PreconditionFailed")
    second = s3.put_object(Bucket=b, Key=key, Body=b"two", IfMatch=first)["ETag"]
    expect("GET If-Match the old ETag", lambda: s3.get_object(Bucket=b, Key=key, IfMatch=first), 412)
    expect("GET If-None-Match the ETag", lambda: s3.get_object(Bucket=b, Key=key, IfNoneMatch=second), 304)
    expect("HEAD If-None-Match the ETag", lambda: s3.head_object(Bucket=b, Key=key, IfNoneMatch=second), 304)
    expect("HEAD If-Match the old ETag", lambda: s3.head_object(Bucket=b, Key=key, IfMatch=first), 412)
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    earlier = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    expect("GET If-Modified-Since later", lambda: s3.get_object(Bucket=b, Key=key, IfModifiedSince=later), 304)
    expect("GET If-Unmodified-Since earlier",
           lambda: s3.get_object(Bucket=b, Key=key, IfUnmodifiedSince=earlier), 412)
    body = s3.get_object(Bucket=b, Key=key, IfMatch=second, IfModifiedSince=earlier)["Body"].read()
    if body != b"two":
        fail(f"GET with conditions that hold gave {body!r}")
    expect("DELETE If-Match the old ETag",
           lambda: s3.delete_object(Bucket=b, Key=key, IfMatch=first), 412, "PreconditionFailed")
    s3.delete_object(Bucket=b, Key=key, IfMatch=second)
    expect("HEAD after the conditional delete", lambda: s3.head_object(Bucket=b, Key=key), 404)
    checked["conditional"] = "412/304 as S3"
    print(json.dumps({"client": f"boto3 {boto3.__version__}", "checked": checked}))


if __name__ == "__main__":
    main()
