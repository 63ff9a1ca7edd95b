"""Use cases: load, let the domain decide, apply through ports. No boto3 here."""
