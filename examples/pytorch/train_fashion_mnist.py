#!/usr/bin/env python3
"""A standard PyTorch DDP script (a CNN on Fashion-MNIST with torchvision transforms), with hetrain added:
the lines marked `# hetrain` (docs/pytorch.md shows the diff). Each rank gets its own slice of every global
batch of B samples, sized by the allocation policy, and the gradients are combined with weights b_i/B, so the
training is the one of a single process on batches of B, whatever the split.

    torchrun --redirects 1 --tee 1 --nproc_per_node 4 examples/pytorch/train_fashion_mnist.py --epochs 1
"""
import argparse
import datetime
import gzip
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

import hetrain.torch as ht  # hetrain

DATA = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


class FashionMnist(Dataset):
    """The gz idx files as a map-style data set of (image, label)."""

    def __init__(self, root, split, transform, limit=0):
        with gzip.open(os.path.join(root, f"{split}-images-idx3-ubyte.gz")) as f:
            self.images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28).copy()
        with gzip.open(os.path.join(root, f"{split}-labels-idx1-ubyte.gz")) as f:
            self.labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
        if limit:
            self.images, self.labels = self.images[:limit], self.labels[:limit]
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(self.images[i]), int(self.labels[i])


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1)
        self.fc1, self.fc2 = nn.Linear(32 * 7 * 7, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=DATA)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("-b", "--global-batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes per rank")
    p.add_argument("--limit", type=int, default=0, help="train on the first N samples only (0: all)")
    p.add_argument("--policy", default="adaptive", help="hetrain: equal | static | adaptive")
    args = p.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    torch.manual_seed(0)
    normalise = transforms.Normalize((0.2860,), (0.3530,))
    train_set = FashionMnist(args.data, "train", transforms.Compose(
        [transforms.ToTensor(), transforms.RandomCrop(28, padding=2), normalise]), args.limit)
    test_set = FashionMnist(args.data, "t10k", transforms.Compose([transforms.ToTensor(), normalise]))

    balancer = ht.Balancer(args.policy, global_batch=args.global_batch)  # hetrain
    sampler = ht.BatchSampler(train_set, balancer, seed=0)  # hetrain: instead of DistributedSampler
    loader = DataLoader(train_set, batch_sampler=sampler, num_workers=args.workers)  # hetrain: batch_sampler
    model = balancer.attach(DDP(Cnn()))  # hetrain: the b_i/B communication hook
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(2, dtype=torch.float64)
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)  # the mean over this rank's slice, as in any DDP script
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += torch.tensor([loss.item() * balancer.weight, 1.0])  # hetrain: b_i/B x mean = global mean
        dist.all_reduce(total)
        model.eval()
        correct = torch.zeros(2)
        with torch.no_grad():
            for x, y in DataLoader(test_set, batch_size=1000):  # every rank scores the whole test set
                correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
        if dist.get_rank() == 0:
            print(f"epoch {epoch + 1}: train loss {total[0] / total[1] * dist.get_world_size():.4f}, "
                  f"test accuracy {correct[0] / correct[1]:.4f}, split {balancer.split()}", flush=True)
    dist.barrier()  # torch 1.13 + Gloo: no rank tears down while another still finishes the last collective
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
