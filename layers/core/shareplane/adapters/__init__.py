"""The only modules that import boto3; each takes an injected client."""
