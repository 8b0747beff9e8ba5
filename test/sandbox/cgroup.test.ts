// Unit tests of finding the cgroup2 mount in mountinfo.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cgroup2Mount } from './cgroup.ts';

test('finds the cgroup2 mount on a hybrid host', () => {
  const mountinfo = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:5 - cgroup2 cgroup2 rw',
  ].join('\n');
  assert.is(cgroup2Mount(mountinfo), '/sys/fs/cgroup/unified');
});

test('unescapes mount points and reports none when there is none', () => {
  assert.is(cgroup2Mount('41 31 0:38 / /mnt/with\\040space rw - cgroup2 none rw\n'), '/mnt/with space');
  assert.is(cgroup2Mount('31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n'), undefined);
});

test.run();
