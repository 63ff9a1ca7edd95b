"""Pure domain core: no boto3, no environment, no clock reads."""
