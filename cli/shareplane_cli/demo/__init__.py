"""`shareplane demo`: the blog's cluster on a laptop, soft quotas against hard partitions."""
