# SPDX-License-Identifier: MIT
# bench/programs/workload.pl - the perl program of `memcg bench programs`.
#
# What Perl is used for, and allocates on: a log generated line by line
# with sprintf, parsed back with regular expressions, counted in nested
# hashes, sorted, joined and split; records kept as hashes of arrays; a
# bounded cache of strings that evicts its oldest keys.  Deterministic for a
# given SCALE (its own generator, not rand(); output sorted where hash order
# would show): every allocator must print the same lines.
#
# Usage: perl workload.pl SCALE   (log lines = SCALE)
use strict;
use warnings;

my $scale = shift // 100000;
my $seed = 12345;
# An LCG (the high bits: the low ones of a power-of-two modulus repeat quickly).
sub rnd { my ($n) = @_; $seed = ($seed * 1103515245 + 12345) % 2147483648; return int($seed / 65536) % $n; }

my @verbs = qw(GET POST PUT DELETE HEAD);
my @words = qw(alpha bravo charlie delta echo foxtrot golf hotel india juliet
               kilo lima mike november oscar papa quebec romeo sierra tango);

# A log, line by line.
my @log;
for my $i (1 .. $scale) {
	my $path = join('/', '', map { $words[rnd(scalar @words)] } 1 .. 1 + rnd(4));
	push @log, sprintf("%06d 10.%d.%d.%d - [%02d:%02d:%02d] \"%s %s?id=%d HTTP/1.1\" %d %d \"%s\"",
		$i, rnd(256), rnd(256), rnd(256), rnd(24), rnd(60), rnd(60),
		$verbs[rnd(scalar @verbs)], $path, rnd(100000),
		(200, 200, 200, 301, 404, 500)[rnd(6)], rnd(50000),
		join(' ', map { $words[rnd(scalar @words)] } 1 .. 2 + rnd(6)));
}

# Parsed back with regular expressions into records and nested counts.
my (%by_status, %by_path, %bytes_by_ip, @records);
for my $line (@log) {
	next unless $line =~ /^(\d+) (\S+) - \[([\d:]+)\] "(\w+) ([^?]+)\?id=(\d+) [^"]+" (\d+) (\d+) "([^"]*)"/;
	my %r = (n => $1, ip => $2, t => $3, verb => $4, path => $5, id => $6, status => $7,
	         bytes => $8, agent => [split / /, $9]);
	$by_status{$r{status}}{$r{verb}}++;
	$by_path{$r{path}} += $r{bytes};
	my ($a, $b) = (split /\./, $r{ip})[1, 2];
	$bytes_by_ip{"$a.$b"} += $r{bytes};
	push @records, \%r;
}

# Words of the agents, counted; the text rebuilt and taken apart again.
my %wc;
$wc{$_}++ for map { @{$_->{agent}} } @records;
my $text = join("\n", map { join(',', $_->{id}, uc($_->{verb}), reverse @{$_->{agent}}) } @records);
my @fields = map { [split /,/] } split /\n/, $text;

# A bounded cache: keys in insertion order, the oldest evicted.
my (%cache, @order, $hits);
$hits = 0;
for my $i (1 .. $scale * 2) {
	my $k = rnd($scale / 2 + 1);
	if (exists $cache{$k}) {
		$hits++;
		next;
	}
	$cache{$k} = "v$k-" x (1 + rnd(16));
	push @order, $k;
	delete $cache{shift @order} while @order > $scale / 8 + 1;
}

my @top = (sort { $by_path{$b} <=> $by_path{$a} || $a cmp $b } keys %by_path)[0 .. 2];
print "records ", scalar(@records), " fields ", scalar(@fields), " text ", length($text), "\n";
for my $s (sort keys %by_status) {
	print "status $s ", join(' ', map { "$_=$by_status{$s}{$_}" } sort keys %{$by_status{$s}}), "\n";
}
print "top paths @top\n";
print "words ", join(' ', map { "$_=$wc{$_}" } (sort keys %wc)[0 .. 4]), "\n";
print "ips ", scalar(keys %bytes_by_ip), " cache ", scalar(keys %cache), " hits $hits\n";
