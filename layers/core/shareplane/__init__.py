"""shareplane: the control plane for GPU training queues on AWS Batch and SageMaker."""

__version__ = "0.1.0"
__all__ = ["__version__"]
