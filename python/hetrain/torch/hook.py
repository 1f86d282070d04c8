"""The DDP communication hook: each rank's gradient scaled by b_i/B, then summed.

With each rank's loss the mean over its own slice, sum_i (b_i/B) mean_i is
the mean over the global batch, whatever the split; DDP's default (the mean
over ranks) is right only for equal slices. A rank given no samples ran on a
stand-in sample: its gradient is set to zero, not multiplied by zero (0 x inf
would be NaN).
"""
import torch.distributed as dist


def scaled_sum_hook(balancer, bucket):
    last = bucket.is_last()
    if last:
        balancer._compute_done()  # the last gradient is ready: this rank's compute ends here
    weight = balancer.weight
    buffer = bucket.buffer()
    if weight == 0.0:
        buffer.zero_()
    else:
        buffer.mul_(weight)
    future = dist.all_reduce(buffer, group=balancer.group, async_op=True).get_future()
    if last:
        balancer._exchange()  # after the gradients' last allreduce, in the same order on every rank
    return future.then(lambda f: f.value()[0])
