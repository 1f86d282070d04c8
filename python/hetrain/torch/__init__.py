"""hetrain for PyTorch DDP: uneven per-rank batches and adaptive allocation (docs/pytorch.md).

    balancer = hetrain.torch.Balancer("adaptive", global_batch=B)
    loader = DataLoader(data, batch_sampler=hetrain.torch.BatchSampler(data, balancer), ...)
    model = balancer.attach(DistributedDataParallel(model))
    # train as usual: loss = the mean over this rank's batch
"""
from hetrain.torch.balancer import Balancer  # noqa: F401
from hetrain.torch.hook import scaled_sum_hook  # noqa: F401
from hetrain.torch.sampler import BatchSampler  # noqa: F401
from hetrain.torch.schedule import LAG, epoch_order  # noqa: F401
